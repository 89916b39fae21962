//! Tenants and keys: applying tenant files (`fleetdesk admin apply`), archived workspaces,
//! members who leave, the personal-key cap, and how keys are stored.

use fleetdesk_tenancy::tenant_file::{ApplyReport, TenantFile};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{AppOptions, Response, TEST_TENANT, TestApp, spawn_app, spawn_app_with};
use serde_json::{Value, json};
use uuid::Uuid;

/// The tenant file example of the decisions (tenant file section), verbatim.
const DOCUMENTED_EXAMPLE: &str = r#"{
  "platform_admins": [{"email": "root@example.com", "name": "Root", "keys": 1}],
  "organizations": [{
    "name": "Acme Agency",
    "monthly_credit_limit": 1000,
    "members": [
      {"email": "ann@acme.test", "name": "Ann", "role": "agency", "keys": 1},
      {"email": "cli@brand.test", "name": "Cli", "role": "client", "review": true, "keys": 1}
    ],
    "workspaces": [{
      "name": "Taiwan",
      "client_review": false,
      "ads_enabled": false,
      "projects": [{"name": "beauty"}],
      "agents": [
        {"name": "writer-1", "role": "operator", "keys": 1},
        {"name": "community-bot", "role": "community", "keys": 1}
      ],
      "personas": [{
        "name": "Mia", "project": "beauty", "agent": "writer-1",
        "bio": "...", "voice": "...",
        "accounts": [{"code": "TW-T001", "platform": "threads", "state": "active",
                      "daily_target": 2, "handle": "@mia", "publishing": "agent"}]
      }],
      "community_spaces": [{"name": "Mia fans", "channel": "whatsapp",
                            "external_id": "1203630@g.us", "market": "TW"}],
      "products": [{"name": "Serum", "on_sale": true}]
    }]
  }]
}"#;

const TABLES: [&str; 10] = [
    "organizations",
    "workspaces",
    "projects",
    "people",
    "members",
    "agents",
    "personas",
    "account_slots",
    "account_generations",
    "api_keys",
];

// ---------------------------------------------------------------------------------------------
// helpers

/// GET /accounts of the Agent API.
async fn list_accounts(app: &TestApp, key: &str) -> Response {
    app.client.get("/api/agent/v1/accounts", key).await
}

/// GET /accounts with an agent key: the status.
async fn agent_status(app: &TestApp, key: &str) -> u16 {
    list_accounts(app, key).await.status
}

/// POST /accounts/{code}/state with the key of an agent, by name.
async fn report_state(app: &TestApp, agent: &str, code: &str, body: Value) -> Response {
    let path = format!("/api/agent/v1/accounts/{code}/state");
    app.client.post(&path, &app.agent_key(agent), &body).await
}

/// A JSON-RPC message to the MCP endpoint with any key.
async fn mcp(app: &TestApp, key: &str, message: Value) -> Response {
    app.client
        .send(
            Request::new("POST", "/api/mcp")
                .bearer(key)
                .header("Accept", "application/json, text/event-stream")
                .header("MCP-Protocol-Version", "2025-06-18")
                .json(&message),
        )
        .await
}

/// MCP `ping` with any key.
async fn ping(app: &TestApp, key: &str) -> Response {
    mcp(
        app,
        key,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    )
    .await
}

/// MCP `tools/call` of `list_accounts`.
async fn mcp_list_accounts(app: &TestApp, key: &str) -> Response {
    let message = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "list_accounts", "arguments": {}}});
    mcp(app, key, message).await
}

#[track_caller]
fn assert_pong(res: &Response) {
    assert_eq!(res.status, 200, "{}", res.text());
    let v = res.json();
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["id"], 1, "{v}");
    assert_eq!(v["result"], json!({}), "{v}");
}

#[track_caller]
fn assert_unauthorized(res: &Response) {
    assert_eq!(res.status, 401, "{}", res.text());
    assert_eq!(res.json()["code"], "unauthorized", "{}", res.text());
}

async fn counts(app: &TestApp) -> Vec<(&'static str, i64)> {
    let mut out = Vec::new();
    for t in TABLES {
        out.push((
            t,
            app.count(&format!("SELECT count(*) AS n FROM {t}")).await,
        ));
    }
    out
}

/// Every `keys` array of a report, flattened.
fn issued_keys(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if k == "keys" {
                        out.extend(
                            x.as_array()
                                .unwrap()
                                .iter()
                                .map(|s| s.as_str().unwrap().to_owned()),
                        );
                    } else {
                        walk(x, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

/// The keys an apply issued.
fn issued_by(report: &ApplyReport) -> Vec<String> {
    issued_keys(&serde_json::to_value(report).unwrap())
}

/// A report without its `keys` arrays: only the ids and names.
fn without_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "keys")
                .map(|(k, x)| (k.clone(), without_keys(x)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_keys).collect()),
        other => other.clone(),
    }
}

/// `<prefix>_<8 alphanumerics>_<43 base64url characters of 32 bytes>`.
#[track_caller]
fn assert_key_shape(key: &str, prefix: &str) {
    use base64::Engine;
    let mut parts = key.splitn(3, '_');
    assert_eq!(parts.next(), Some(prefix), "{key}");
    let lookup = parts.next().unwrap_or_default();
    let secret = parts.next().unwrap_or_default();
    assert_eq!(lookup.len(), 8, "{key}");
    assert!(lookup.bytes().all(|b| b.is_ascii_alphanumeric()), "{key}");
    assert_eq!(secret.len(), 43, "{key}");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(secret)
        .unwrap_or_else(|e| panic!("{key}: {e}"));
    assert_eq!(raw.len(), 32, "{key}");
    assert_eq!(key.len(), prefix.len() + 1 + 8 + 1 + 43);
}

fn lookup_of(key: &str) -> &str {
    &key[4..12]
}

fn workspace_id(app: &TestApp, org: &str, name: &str) -> Uuid {
    app.tenant
        .organizations
        .iter()
        .find(|o| o.name == org)
        .and_then(|o| o.workspaces.iter().find(|w| w.name == name))
        .map(|w| w.id)
        .unwrap_or_else(|| panic!("no workspace {org}/{name}"))
}

// ---------------------------------------------------------------------------------------------
// applying the same file again

#[tokio::test(flavor = "multi_thread")]
async fn applying_the_same_file_again_keeps_every_id_and_issues_no_key() {
    let app = spawn_app().await;
    // A later state comes from an agent's report; applying again must not reset it.
    let ban = report_state(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "banned", "reason": "ban", "occurred_at": "2026-11-21 10:00"}),
    )
    .await;
    assert_eq!(ban.status, 200, "{}", ban.text());
    let before = counts(&app).await;

    let again = app.apply(TEST_TENANT).await;
    let first = serde_json::to_value(&app.tenant).unwrap();
    let second = serde_json::to_value(&again).unwrap();
    assert_eq!(
        without_keys(&second),
        without_keys(&first),
        "ids changed on the second apply"
    );
    assert_eq!(
        issued_keys(&second),
        Vec::<String>::new(),
        "no key should be issued again"
    );
    assert!(!issued_keys(&first).is_empty());
    assert_eq!(counts(&app).await, before);

    // Everything still works as before.
    for key in issued_keys(&first) {
        if key.starts_with("fda_") {
            let status = agent_status(&app, &key).await;
            assert!(status == 200 || status == 403, "{status} for an agent key");
        } else {
            assert_pong(&ping(&app, &key).await);
        }
    }
    let list = list_accounts(&app, &app.agent_key("op1")).await.json();
    let t = list["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["code"] == "TW-T001")
        .unwrap()
        .clone();
    assert_eq!(t["state"], "banned");
    assert_eq!(t["generation"], 1);
    assert_eq!(t["handle"], "mia");
}

#[tokio::test(flavor = "multi_thread")]
async fn re_applying_after_a_revocation_issues_exactly_the_missing_key() {
    let app = spawn_app().await;
    let keys = app.agent_keys("op1");
    assert_eq!(keys.len(), 2);
    app.sql(&format!(
        "UPDATE api_keys SET revoked_at = now() WHERE lookup = '{}'",
        lookup_of(&keys[0])
    ))
    .await;
    assert_unauthorized(&list_accounts(&app, &keys[0]).await);
    assert_eq!(agent_status(&app, &keys[1]).await, 200);
    let total = app.count("SELECT count(*) AS n FROM api_keys").await;

    let report = app.apply(TEST_TENANT).await;
    let issued = issued_by(&report);
    assert_eq!(issued.len(), 1, "{issued:?}");
    let op1 = report.organizations[0].workspaces[0]
        .agents
        .iter()
        .find(|a| a.name == "op1")
        .unwrap();
    assert_eq!(op1.keys, issued);
    assert_key_shape(&issued[0], "fda");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM api_keys").await,
        total + 1
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM api_keys WHERE agent_id = '{}' AND revoked_at IS NULL",
            app.agent_id("op1")
        ))
        .await,
        2
    );

    // The new key is op1's; the revoked one stays revoked.
    let res = list_accounts(&app, &issued[0]).await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.json()["agent"]["name"], "op1");
    assert_eq!(res.json()["accounts"].as_array().unwrap().len(), 5);
    assert_unauthorized(&list_accounts(&app, &keys[0]).await);
    assert_eq!(agent_status(&app, &keys[1]).await, 200);

    // Asking for more keys issues only the difference.
    let more = TEST_TENANT.replace(
        r#"{"name": "op2", "role": "operator", "keys": 1}"#,
        r#"{"name": "op2", "role": "operator", "keys": 3}"#,
    );
    assert_ne!(more, TEST_TENANT);
    let report = app.apply(&more).await;
    let issued = issued_by(&report);
    assert_eq!(issued.len(), 2, "{issued:?}");
    for key in &issued {
        assert_eq!(
            list_accounts(&app, key).await.json()["agent"]["name"],
            "op2"
        );
    }
    assert!(issued_by(&app.apply(&more).await).is_empty());
}

// ---------------------------------------------------------------------------------------------
// archived workspaces

#[tokio::test(flavor = "multi_thread")]
async fn an_archived_workspace_refuses_its_agent_keys_until_it_is_restored() {
    let app = spawn_app().await;
    let taiwan = workspace_id(&app, "Acme", "Taiwan");
    let taiwan_keys: Vec<String> = ["op1", "op2", "bot"]
        .iter()
        .flat_map(|a| app.agent_keys(a))
        .collect();
    assert_eq!(taiwan_keys.len(), 4);
    let archive = r#"{"organizations": [{"name": "Acme", "workspaces": [{"name": "Taiwan", "archived": true}]}]}"#;
    let restore = r#"{"organizations": [{"name": "Acme", "workspaces": [{"name": "Taiwan", "archived": false}]}]}"#;
    let keys_before = app
        .count("SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL")
        .await;

    let report = app.apply(archive).await;
    assert_eq!(report.organizations[0].id, app.tenant.organizations[0].id);
    assert_eq!(report.organizations[0].workspaces[0].id, taiwan);
    assert!(report.organizations[0].workspaces[0].archived);
    for key in &taiwan_keys {
        assert_unauthorized(&list_accounts(&app, key).await);
    }
    assert_unauthorized(&ping(&app, &app.agent_key("op1")).await);
    assert_unauthorized(&mcp_list_accounts(&app, &app.agent_key("op1")).await);
    assert_unauthorized(
        &app.client
            .post(
                "/api/agent/v1/heartbeat",
                &app.agent_key("op1"),
                &json!({"run_id": "r"}),
            )
            .await,
    );
    // The organization's other workspace, the other organization and people are unaffected.
    assert_eq!(agent_status(&app, &app.agent_key("jp1")).await, 200);
    assert_eq!(agent_status(&app, &app.agent_key("other1")).await, 200);
    assert_pong(&ping(&app, &app.personal_key("ann@acme.test")).await);
    // Nothing was revoked: the keys are refused because of the workspace.
    assert_eq!(
        app.count("SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL")
            .await,
        keys_before
    );

    // A file that does not mention `archived` leaves the workspace archived.
    app.apply(TEST_TENANT).await;
    assert_unauthorized(&list_accounts(&app, &app.agent_key("op1")).await);

    // Restoring revives the same keys.
    let report = app.apply(restore).await;
    assert_eq!(report.organizations[0].workspaces[0].id, taiwan);
    assert!(!report.organizations[0].workspaces[0].archived);
    assert!(issued_by(&report).is_empty());
    for key in &taiwan_keys {
        let status = agent_status(&app, key).await;
        // bot is a community agent: authenticated again, but without accounts:read.
        assert!(status == 200 || status == 403, "{status}");
    }
    for name in ["op1", "op2"] {
        for key in app.agent_keys(name) {
            assert_eq!(agent_status(&app, &key).await, 200, "{name}");
        }
    }
    assert_eq!(agent_status(&app, &app.agent_key("bot")).await, 403);
    assert_pong(&ping(&app, &app.agent_key("op1")).await);
    let mcp = mcp_list_accounts(&app, &app.agent_key("op1")).await;
    assert_eq!(mcp.status, 200, "{}", mcp.text());
    let result = &mcp.json()["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"]["accounts"]
            .as_array()
            .map(Vec::len),
        Some(5),
        "{result}"
    );
    let list = list_accounts(&app, &app.agent_key("op1")).await.json();
    assert_eq!(list["accounts"].as_array().unwrap().len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn archiving_a_workspace_of_another_organization_leaves_these_agents_alone() {
    let app = spawn_app().await;
    // The same workspace name in another organization is another workspace.
    let same_name = r#"{"organizations": [{"name": "Other Agency", "workspaces": [{"name": "Taiwan", "archived": true}]}]}"#;
    let report = app.apply(same_name).await;
    assert_eq!(report.organizations[0].id, app.tenant.organizations[1].id);
    assert_ne!(
        report.organizations[0].workspaces[0].id,
        workspace_id(&app, "Acme", "Taiwan")
    );
    for name in ["op1", "op2", "jp1", "other1"] {
        assert_eq!(
            agent_status(&app, &app.agent_key(name)).await,
            200,
            "{name}"
        );
    }

    // Archiving Other Agency's Main stops only other1.
    let main = r#"{"organizations": [{"name": "Other Agency", "workspaces": [{"name": "Main", "archived": true}]}]}"#;
    let report = app.apply(main).await;
    assert_eq!(
        report.organizations[0].workspaces[0].id,
        workspace_id(&app, "Other Agency", "Main")
    );
    assert_unauthorized(&list_accounts(&app, &app.agent_key("other1")).await);
    for name in ["op1", "op2", "jp1"] {
        assert_eq!(
            agent_status(&app, &app.agent_key(name)).await,
            200,
            "{name}"
        );
    }
    // Acme's TW-T001 is still reachable by its agent; Other Agency's people still work.
    let res = report_state(
        &app,
        "op1",
        "TW-T001",
        json!({"state": "warming", "occurred_at": "2026-11-21 10:00"}),
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_pong(&ping(&app, &app.personal_key("olga@other.test")).await);
}

// ---------------------------------------------------------------------------------------------
// members and personal keys

#[tokio::test(flavor = "multi_thread")]
async fn a_member_who_leaves_loses_her_personal_keys_until_she_returns() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    assert_pong(&ping(&app, &ann).await);

    // Ann is also a member of Other Agency, with a key of that organization.
    let joined = app
        .apply(r#"{"organizations": [{"name": "Other Agency", "members": [{"email": "ann@acme.test", "name": "Ann", "role": "agency", "keys": 1}]}]}"#)
        .await;
    let ann_other = joined.organizations[0].members[0].keys.clone();
    assert_eq!(ann_other.len(), 1);
    assert_key_shape(&ann_other[0], "fdp");
    assert_eq!(
        joined.organizations[0].members[0].id, app.tenant.organizations[0].members[0].id,
        "the same person"
    );
    assert_pong(&ping(&app, &ann_other[0]).await);

    let keys_before = app.count("SELECT count(*) AS n FROM api_keys").await;
    let left = app
        .apply(r#"{"organizations": [{"name": "Acme", "members": [{"email": "ann@acme.test", "name": "Ann", "role": "agency", "keys": 1, "left": true}]}]}"#)
        .await;
    assert!(
        left.organizations[0].members[0].keys.is_empty(),
        "no key is issued to a member who left"
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM api_keys").await,
        keys_before
    );
    assert_unauthorized(&ping(&app, &ann).await);
    // Her membership elsewhere, the other members and the agents are unaffected.
    assert_pong(&ping(&app, &ann_other[0]).await);
    assert_pong(&ping(&app, &app.personal_key("cli@brand.test")).await);
    assert_eq!(agent_status(&app, &app.agent_key("op1")).await, 200);

    // She comes back: the same key works again, and no new one is issued.
    let back = app
        .apply(r#"{"organizations": [{"name": "Acme", "members": [{"email": "ann@acme.test", "name": "Ann", "role": "agency", "left": false}]}]}"#)
        .await;
    assert!(back.organizations[0].members[0].keys.is_empty());
    assert_pong(&ping(&app, &ann).await);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM api_keys").await,
        keys_before
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn at_most_ten_personal_keys_per_member_per_organization() {
    // The file is refused, naming the member.
    let with = |from: &str, to: &str| {
        let s = TEST_TENANT.replace(from, to);
        assert_ne!(s, TEST_TENANT, "{from}");
        s
    };
    let ann = r#""name": "Ann", "role": "agency", "keys": 1}"#;
    let cli = r#""role": "client", "review": true, "keys": 1}"#;
    let olga = r#""name": "Olga", "role": "agency", "keys": 1}"#;
    let root = r#""name": "Root", "keys": 1}"#;
    for (from, to, path) in [
        (
            ann,
            ann.replace("\"keys\": 1", "\"keys\": 11"),
            "organizations[0].members[0].keys",
        ),
        (
            cli,
            cli.replace("\"keys\": 1", "\"keys\": 11"),
            "organizations[0].members[1].keys",
        ),
        (
            olga,
            olga.replace("\"keys\": 1", "\"keys\": 11"),
            "organizations[1].members[0].keys",
        ),
        (
            root,
            root.replace("\"keys\": 1", "\"keys\": 11"),
            "platform_admins[0].keys",
        ),
    ] {
        let e = TenantFile::parse(&with(from, &to)).expect_err(path);
        assert_eq!(e.path, path);
        assert!(
            TenantFile::parse(&with(from, &to.replace("11", "10"))).is_ok(),
            "{path}: 10 is allowed"
        );
    }

    // Ten are issued up to the cap, and all of them work.
    let app = spawn_app().await;
    let ten = with(ann, &ann.replace("\"keys\": 1", "\"keys\": 10"));
    let report = app.apply(&ten).await;
    let issued = issued_by(&report);
    assert_eq!(issued.len(), 9, "{issued:?}");
    assert_eq!(report.organizations[0].members[0].keys, issued);
    let person = report.organizations[0].members[0].id;
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) AS n FROM api_keys WHERE person_id = '{person}' AND revoked_at IS NULL"
        ))
        .await,
        10
    );
    for key in &issued {
        assert_key_shape(key, "fdp");
        assert_pong(&ping(&app, key).await);
    }
    assert!(issued_by(&app.apply(&ten).await).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_are_stored_only_as_their_lookup_and_a_hash() {
    let app = spawn_app().await;
    let report = serde_json::to_value(&app.tenant).unwrap();
    let keys = issued_keys(&report);
    assert_eq!(keys.len(), 11, "{keys:?}");
    // Only kind and lookup are text in api_keys.
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM information_schema.columns WHERE table_name = 'api_keys' \
             AND table_schema = current_schema() AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb') AND column_name NOT IN ('kind', 'lookup')"
        )
        .await,
        0
    );
    for key in &keys {
        let prefix = &key[..3];
        assert_key_shape(key, prefix);
        let lookup = lookup_of(key);
        let secret = &key[13..];
        assert_eq!(
            app.count(&format!(
                "SELECT count(*) AS n FROM api_keys WHERE lookup = '{lookup}' AND length(lookup) = 8 \
                 AND octet_length(secret_hash) = 32 AND secret_hash = sha256(convert_to('{key}', 'UTF8')) AND revoked_at IS NULL"
            ))
            .await,
            1,
            "{prefix} key {lookup}"
        );
        // No table of the database holds the secret part, in the key's alphabet or the
        // standard one (as raw bytes would show up).
        let standard: String = secret
            .chars()
            .take(40)
            .map(|c| match c {
                '-' => '+',
                '_' => '/',
                c => c,
            })
            .collect();
        for needle in [secret, &secret[..20], standard.as_str()] {
            let found = app
                .count(&format!(
                    "SELECT count(*) AS n FROM information_schema.tables t \
                     WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE' \
                     AND position('{needle}' IN query_to_xml(format('SELECT * FROM %I.%I', t.table_schema, t.table_name), true, false, '')::text) > 0"
                ))
                .await;
            assert_eq!(found, 0, "a table holds the secret of key {lookup}");
        }
        // The same search does find what is stored: the lookup.
        let found = app
            .count(&format!(
                "SELECT count(*) AS n FROM information_schema.tables t \
                 WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE' \
                 AND position('{lookup}' IN query_to_xml(format('SELECT * FROM %I.%I', t.table_schema, t.table_name), true, false, '')::text) > 0"
            ))
            .await;
        assert!(found >= 1, "the search should find the lookup {lookup}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_platform_admins_key_works_on_mcp() {
    let app = spawn_app().await;
    let root = app.personal_key("root@example.com");
    assert_key_shape(&root, "fdp");
    assert_pong(&ping(&app, &root).await);
    // It is a personal key, not an agent key.
    assert_eq!(list_accounts(&app, &root).await.status, 403);
    // Revoked, it stops at once.
    app.sql(&format!(
        "UPDATE api_keys SET revoked_at = now() WHERE lookup = '{}'",
        lookup_of(&root)
    ))
    .await;
    assert_unauthorized(&ping(&app, &root).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_personal_key_works_only_once_first_login_setup_is_complete() {
    let app = spawn_app().await;
    let ann = app.personal_key("ann@acme.test");
    assert_pong(&ping(&app, &ann).await);
    app.sql("UPDATE people SET setup_complete = false WHERE email = 'ann@acme.test'")
        .await;
    assert_unauthorized(&ping(&app, &ann).await);
    assert_pong(&ping(&app, &app.personal_key("cli@brand.test")).await);
    app.sql("UPDATE people SET setup_complete = true WHERE email = 'ann@acme.test'")
        .await;
    assert_pong(&ping(&app, &ann).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn changing_an_agents_role_changes_all_its_keys_at_once() {
    let app = spawn_app().await;
    let op1 = r#"{"name": "op1", "role": "operator", "keys": 2}"#;
    let bot = r#"{"name": "bot", "role": "community", "keys": 1}"#;
    let swapped = TEST_TENANT
        .replace(op1, &op1.replace("operator", "community"))
        .replace(bot, &bot.replace("community", "operator"))
        // A community agent cannot sync a wiki source: op1's goes to no agent.
        .replace(
            r#""agent": "op1", "every_hours": 24"#,
            r#""every_hours": 24"#,
        );
    assert_ne!(swapped, TEST_TENANT);
    assert_eq!(agent_status(&app, &app.agent_key("bot")).await, 403);

    let report = app.apply(&swapped).await;
    assert!(issued_by(&report).is_empty());
    for key in app.agent_keys("op1") {
        let res = list_accounts(&app, &key).await;
        assert_eq!(res.status, 403, "{}", res.text());
        assert_eq!(res.json()["code"], "forbidden");
        // Still a valid key: it authenticates.
        assert_pong(&ping(&app, &key).await);
    }
    let res = list_accounts(&app, &app.agent_key("bot")).await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.json()["accounts"], json!([]), "bot has no persona");
    let hb = app
        .client
        .post(
            "/api/agent/v1/heartbeat",
            &app.agent_key("bot"),
            &json!({"run_id": "r"}),
        )
        .await;
    assert_eq!(hb.status, 200, "{}", hb.text());

    app.apply(TEST_TENANT).await;
    for key in app.agent_keys("op1") {
        assert_eq!(agent_status(&app, &key).await, 200);
    }
    assert_eq!(agent_status(&app, &app.agent_key("bot")).await, 403);
}

#[tokio::test(flavor = "multi_thread")]
async fn optional_account_fields_of_the_tenant_file_are_applied() {
    let app = spawn_app().await;
    let file = r#"{"organizations": [{"name": "Acme", "workspaces": [{
        "name": "Taiwan", "projects": [{"name": "beauty"}], "agents": [{"name": "op1", "role": "operator"}],
        "personas": [{"name": "Mia", "project": "beauty", "agent": "op1", "accounts": [
            {"code": "us-f001", "platform": "facebook", "state": "active", "market": "us",
             "timezone": "America/Los_Angeles", "legacy_code": "mia_fb", "onboarded_at": "2026-01-15",
             "publishing": "fleetdesk", "daily_target": 3, "handle": "@mia.us"}]}]}]}]}"#;
    let report = app.apply(file).await;
    assert!(issued_by(&report).is_empty());
    let persona = &report.organizations[0].workspaces[0].personas[0];
    assert_eq!(persona.id, app.persona_id("Mia"));
    assert_eq!(persona.accounts[0].code, "US-F001");

    let list = list_accounts(&app, &app.agent_key("op1")).await.json();
    let accounts = list["accounts"].as_array().unwrap();
    assert_eq!(accounts.len(), 6, "{list}");
    let a = accounts.iter().find(|a| a["code"] == "US-F001").unwrap();
    for (k, want) in [
        ("platform", json!("facebook")),
        ("market", json!("US")),
        ("timezone", json!("America/Los_Angeles")),
        ("legacy_code", json!("MIA_FB")),
        ("publishing", json!("fleetdesk")),
        ("daily_target", json!(3)),
        ("handle", json!("mia.us")),
        ("state", json!("active")),
        ("generation", json!(1)),
        ("persona", json!("Mia")),
    ] {
        assert_eq!(a[k], want, "{k} of {a}");
    }
    assert_eq!(a["slot_id"], persona.accounts[0].slot_id.to_string());
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_generations g JOIN account_slots s ON s.id = g.slot_id \
                   WHERE s.code = 'US-F001' AND g.onboarded_at = DATE '2026-01-15'")
            .await,
        1
    );
    // Mia's other accounts and their bio are untouched.
    let t = accounts.iter().find(|a| a["code"] == "TW-T001").unwrap();
    assert_eq!(t["daily_target"], 2);
    assert_eq!(
        app.count(
            "SELECT count(*) AS n FROM personas WHERE name = 'Mia' AND bio = 'b' AND voice = 'v'"
        )
        .await,
        1
    );

    // The legacy code reaches the account, and market-local time is the account's zone.
    let res = report_state(
        &app,
        "op1",
        "mia_fb",
        json!({"state": "paused", "reason": "r", "occurred_at": "2026-11-21 10:00"}),
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(res.json()["code"], "US-F001");
    assert_eq!(
        app.count("SELECT count(*) AS n FROM account_state_changes WHERE occurred_at = TIMESTAMPTZ '2026-11-21T18:00:00Z'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_that_gives_a_code_to_another_persona_is_refused_whole() {
    use fleetdesk_tenancy::ports::TenantStore;
    let app = spawn_app().await;
    let before = counts(&app).await;
    let file = r#"{"organizations": [{"name": "Acme", "workspaces": [{
        "name": "Taiwan", "projects": [{"name": "beauty"}],
        "agents": [{"name": "op1", "role": "operator"}, {"name": "op9", "role": "operator", "keys": 1}],
        "personas": [{"name": "Mia", "project": "beauty", "agent": "op1",
                      "accounts": [{"code": "TW-T002", "platform": "threads", "state": "active"}]}]}]}]}"#;
    let parsed = TenantFile::parse(file).expect("a valid file");
    let result = app.store.apply(&parsed).await;
    assert!(
        result.is_err(),
        "TW-T002 is Leo's; the file must be refused"
    );
    assert_eq!(
        counts(&app).await,
        before,
        "nothing of a refused file is applied"
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM agents WHERE name = 'op9'")
            .await,
        0
    );
    let leo = list_accounts(&app, &app.agent_key("op2")).await.json();
    assert_eq!(leo["accounts"][0]["code"], "TW-T002");
    assert_eq!(leo["accounts"][0]["persona"], "Leo");
}

// ---------------------------------------------------------------------------------------------
// the documented example

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_example_applies_cleanly_to_an_empty_service() {
    let app = spawn_app_with(AppOptions {
        tenant: None,
        ..Default::default()
    })
    .await;
    assert_eq!(
        app.count("SELECT count(*) AS n FROM organizations").await,
        0
    );

    let report = app.apply(DOCUMENTED_EXAMPLE).await;
    let v = serde_json::to_value(&report).unwrap();
    let uuid = |x: &Value| x.as_str().is_some_and(|s| Uuid::parse_str(s).is_ok());

    assert!(uuid(&v["platform_admins"][0]["id"]), "{v}");
    assert_eq!(v["platform_admins"][0]["keys"].as_array().unwrap().len(), 1);
    let org = &v["organizations"][0];
    assert!(uuid(&org["id"]), "{org}");
    let members = org["members"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    for (m, email) in members.iter().zip(["ann@acme.test", "cli@brand.test"]) {
        assert!(uuid(&m["id"]), "{m}");
        assert_eq!(m["email"], email);
        assert_eq!(m["keys"].as_array().unwrap().len(), 1, "{m}");
    }
    let ws = &org["workspaces"][0];
    assert!(uuid(&ws["id"]), "{ws}");
    assert_eq!(ws["projects"].as_array().unwrap().len(), 1);
    assert!(uuid(&ws["projects"][0]["id"]));
    assert_eq!(ws["projects"][0]["name"], "beauty");
    let agents = ws["agents"].as_array().unwrap();
    assert_eq!(
        agents
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["writer-1", "community-bot"]
    );
    for a in agents {
        assert!(uuid(&a["id"]), "{a}");
        assert_eq!(a["keys"].as_array().unwrap().len(), 1, "{a}");
    }
    let persona = &ws["personas"][0];
    assert!(uuid(&persona["id"]), "{persona}");
    assert_eq!(persona["name"], "Mia");
    assert_eq!(persona["accounts"][0]["code"], "TW-T001");
    assert_eq!(persona["accounts"][0]["platform"], "threads");
    assert_eq!(ws["community_spaces"].as_array().unwrap().len(), 1);
    assert!(uuid(&ws["community_spaces"][0]["space_id"]), "{ws}");

    // Keys of the documented shape, all different.
    let keys = issued_keys(&v);
    assert_eq!(keys.len(), 5);
    let mut distinct = keys.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 5);
    for k in v["platform_admins"][0]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .chain(members.iter().flat_map(|m| m["keys"].as_array().unwrap()))
    {
        assert_key_shape(k.as_str().unwrap(), "fdp");
    }
    for a in agents {
        assert_key_shape(a["keys"][0].as_str().unwrap(), "fda");
    }

    // What it set up is there and usable.
    let writer = agents[0]["keys"][0].as_str().unwrap();
    let res = list_accounts(&app, writer).await;
    assert_eq!(res.status, 200, "{}", res.text());
    let list = res.json();
    assert_eq!(list["agent"]["name"], "writer-1");
    let accounts = list["accounts"].as_array().unwrap();
    assert_eq!(accounts.len(), 1);
    let a = &accounts[0];
    for (k, want) in [
        ("code", json!("TW-T001")),
        ("platform", json!("threads")),
        ("state", json!("active")),
        ("daily_target", json!(2)),
        ("handle", json!("mia")),
        ("publishing", json!("agent")),
        ("persona", json!("Mia")),
        ("market", json!("TW")),
        ("timezone", json!("Asia/Taipei")),
        ("generation", json!(1)),
    ] {
        assert_eq!(a[k], want, "{k} of {a}");
    }
    assert_eq!(a["slot_id"], persona["accounts"][0]["slot_id"]);
    let bot = agents[1]["keys"][0].as_str().unwrap();
    assert_eq!(list_accounts(&app, bot).await.status, 403);
    for k in keys.iter().filter(|k| k.starts_with("fdp_")) {
        assert_pong(&ping(&app, k).await);
    }
    assert_eq!(app.count("SELECT count(*) AS n FROM organizations WHERE name = 'Acme Agency' AND monthly_credit_limit = 1000").await, 1);
    assert_eq!(
        app.count("SELECT count(*) AS n FROM products WHERE name = 'Serum' AND on_sale")
            .await,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM community_spaces WHERE external_id = '1203630@g.us' AND channel = 'whatsapp' AND market = 'TW'").await,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM members WHERE review")
            .await,
        1
    );
    assert_eq!(
        app.count("SELECT count(*) AS n FROM people WHERE platform_admin")
            .await,
        1
    );

    // Applying it again changes nothing and issues nothing.
    let again = serde_json::to_value(app.apply(DOCUMENTED_EXAMPLE).await).unwrap();
    assert!(issued_keys(&again).is_empty());
    assert_eq!(without_keys(&again), without_keys(&v));
}

#[tokio::test(flavor = "multi_thread")]
async fn wiki_review_stays_when_the_file_leaves_it_out_and_a_moved_source_starts_over() {
    let app = spawn_app().await;
    let manual = TEST_TENANT.replacen(
        r#""name": "Acme","#,
        r#""name": "Acme", "wiki_review": "manual","#,
        1,
    );
    assert_ne!(manual, TEST_TENANT);
    app.apply(&manual).await;
    let review =
        "SELECT count(*) AS n FROM organizations WHERE name = 'Acme' AND wiki_review = 'manual'";
    assert_eq!(app.count(review).await, 1);
    // The standard file says nothing of wiki_review: the setting stays.
    app.apply(TEST_TENANT).await;
    assert_eq!(app.count(review).await, 1);

    app.sql(
        "UPDATE wiki_sources SET cursor = 'notes/k', last_run_at = now(), last_status = 'success' \
         WHERE name IN ('Voice notes', 'Lessons')",
    )
    .await;
    let moved = TEST_TENANT.replace(
        "https://notion.so/acme/voice",
        "https://notion.so/acme/voice-2026",
    );
    assert_ne!(moved, TEST_TENANT);
    app.apply(&moved).await;
    let kept = |name: &str| {
        format!(
            "SELECT count(*) AS n FROM wiki_sources WHERE name = '{name}' AND cursor = 'notes/k' \
             AND last_run_at IS NOT NULL AND last_status = 'success'"
        )
    };
    let fresh = "SELECT count(*) AS n FROM wiki_sources WHERE name = 'Voice notes' \
                 AND cursor IS NULL AND last_run_at IS NULL AND last_status IS NULL";
    assert_eq!(app.count(fresh).await, 1, "the moved source starts over");
    assert_eq!(
        app.count(&kept("Lessons")).await,
        1,
        "the unchanged one keeps its place"
    );
    app.stop().await;
}
