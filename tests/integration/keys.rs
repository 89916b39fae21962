//! Personal API: the platform admins' keys, `GET /admin/keys` (list_keys) and
//! `POST /admin/keys/{kind}/{id}/revoke` (revoke_key), over HTTP and MCP: records never carry
//! a key, only platform admins, revocation immediate (the next request is 401), irreversible,
//! and revoking twice answers unchanged.

use fleetdesk_tests::assert::{assert_error, tool_result};
use fleetdesk_tests::client::Request;
use fleetdesk_tests::{Response, TestApp, spawn_app};
use serde_json::{Value, json};

const KEYS: &str = "/api/user/v1/admin/keys";

fn ok(r: &Response) -> Value {
    assert!(
        (200..300).contains(&r.status),
        "{} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    r.json()
}

/// Every key the tenant file issued.
fn every_key(app: &TestApp) -> Vec<String> {
    let people = app
        .tenant
        .platform_admins
        .iter()
        .chain(app.tenant.organizations.iter().flat_map(|o| &o.members))
        .flat_map(|p| p.keys.clone());
    let agents = app
        .tenant
        .organizations
        .iter()
        .flat_map(|o| &o.workspaces)
        .flat_map(|w| &w.agents)
        .flat_map(|a| a.keys.clone());
    people.chain(agents).collect()
}

/// The record of a key by its lookup (the 8 characters after the prefix).
fn record_of<'a>(page: &'a Value, key: &str) -> &'a Value {
    let lookup = &key[4..12];
    page["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["lookup"] == lookup)
        .unwrap_or_else(|| panic!("no record with lookup {lookup}: {page}"))
}

async fn mcp(app: &TestApp, key: &str, name: &str, arguments: Value) -> Value {
    let msg = ok(&app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}))
            .bearer(key),
        )
        .await);
    tool_result(name, &msg)
}

#[tokio::test(flavor = "multi_thread")]
async fn admins_list_every_key_without_its_value() {
    let app = spawn_app().await;
    let root = app.personal_key("root@example.com");
    let keys = every_key(&app);
    let r = app.client.get(&format!("{KEYS}?limit=200"), &root).await;
    let text = r.text();
    let page = ok(&r);
    assert_eq!(page["keys"].as_array().unwrap().len(), keys.len(), "{page}");
    assert_eq!(page["next_cursor"], Value::Null);
    for key in &keys {
        assert!(!text.contains(key.as_str()), "a key value is in the answer");
        // Nor its secret part alone.
        assert!(
            !text.contains(&key[13..]),
            "a key's secret is in the answer"
        );
    }
    let op1 = record_of(&page, &app.agent_key("op1"));
    assert_eq!(op1["kind"], "agent");
    assert_eq!(op1["owner"]["name"], "op1");
    assert_eq!(op1["owner"]["id"], app.agent_id("op1").to_string());
    assert_eq!(op1["revoked_at"], Value::Null);
    // Every record holds exactly these fields (no key, no hash), its owner only id and name.
    let page_fields: Vec<&String> = page.as_object().unwrap().keys().collect();
    assert_eq!(page_fields, ["keys", "next_cursor"]);
    for record in page["keys"].as_array().unwrap() {
        let fields: Vec<&String> = record.as_object().unwrap().keys().collect();
        assert_eq!(
            fields,
            [
                "created_at",
                "id",
                "kind",
                "last_used_at",
                "lookup",
                "owner",
                "revoked_at"
            ],
            "{record}"
        );
        let owner: Vec<&String> = record["owner"].as_object().unwrap().keys().collect();
        assert_eq!(owner, ["id", "name"], "{record}");
    }
    let ann = record_of(&page, &app.personal_key("ann@acme.test"));
    assert_eq!(ann["kind"], "user");
    assert_eq!(ann["owner"]["name"], "Ann");
    // The admin's own key was just used.
    assert!(record_of(&page, &root)["last_used_at"].is_string());

    // Filters and pages: kind, then pages of 3 newest first that together hold every key.
    let agents = ok(&app
        .client
        .get(&format!("{KEYS}?kind=agent&limit=200"), &root)
        .await);
    assert!(
        agents["keys"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["kind"] == "agent")
    );
    let users = ok(&app
        .client
        .get(&format!("{KEYS}?kind=user&limit=200"), &root)
        .await);
    assert_eq!(
        agents["keys"].as_array().unwrap().len() + users["keys"].as_array().unwrap().len(),
        keys.len()
    );
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = ok(&app
            .client
            .get(&format!("{KEYS}?limit=3{cursor}"), &root)
            .await);
        let items = page["keys"].as_array().unwrap();
        assert!(items.len() <= 3);
        seen.extend(items.iter().map(|k| k["id"].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    let all: Vec<String> = page["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(seen, all, "pages of 3 are the list in the same order");
    // Limits: 1-200.
    for bad in [
        "limit=0",
        "limit=201",
        "kind=robot",
        "revoked=maybe",
        "cursor=x",
    ] {
        let r = app.client.get(&format!("{KEYS}?{bad}"), &root).await;
        assert_error(&r, 400, "invalid_request");
    }
    ok(&app.client.get(&format!("{KEYS}?limit=1"), &root).await);

    // Over MCP, the same records and no key either.
    let result = mcp(
        &app,
        &root,
        "list_keys",
        json!({"kind": "user", "limit": 200}),
    )
    .await;
    let text = result["body"].to_string();
    assert_eq!(result["body"]["keys"], users["keys"]);
    for key in &keys {
        assert!(!text.contains(key.as_str()));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn only_platform_admins_reach_the_keys() {
    let app = spawn_app().await;
    let victim = app.agent_key("op2");
    let path = {
        let root = app.personal_key("root@example.com");
        let page = ok(&app.client.get(&format!("{KEYS}?limit=200"), &root).await);
        let id = record_of(&page, &victim)["id"].as_str().unwrap().to_owned();
        format!("{KEYS}/agent/{id}/revoke")
    };
    for person in [
        "ann@acme.test",
        "cli@brand.test",
        "cid@brand.test",
        "olga@other.test",
    ] {
        let key = app.personal_key(person);
        assert_error(&app.client.get(KEYS, &key).await, 403, "forbidden");
        assert_error(
            &app.client.post(&path, &key, &json!({})).await,
            403,
            "forbidden",
        );
    }
    // An agent key is not a personal key: refused like any caller without the access.
    let r = app.client.get(KEYS, &app.agent_key("op1")).await;
    assert_error(&r, 403, "forbidden");
    // Nothing was revoked.
    assert_eq!(
        app.count("SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NOT NULL")
            .await,
        0
    );
    ok(&app.client.get("/api/agent/v1/accounts", &victim).await);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_key_is_refused_at_once_and_for_good() {
    let app = spawn_app().await;
    let root = app.personal_key("root@example.com");
    let page = ok(&app.client.get(&format!("{KEYS}?limit=200"), &root).await);
    let op1_keys = app.agent_keys("op1");
    let (gone, kept) = (&op1_keys[0], &op1_keys[1]);
    let ann = app.personal_key("ann@acme.test");
    let op1_id = record_of(&page, gone)["id"].as_str().unwrap().to_owned();
    let ann_id = record_of(&page, &ann)["id"].as_str().unwrap().to_owned();

    // Both keys work now.
    ok(&app.client.get("/api/agent/v1/accounts", gone).await);
    ok(&app.client.get("/api/user/v1/me", &ann).await);

    // The wrong kind for the id, an unknown id: 404; a kind that is neither: 400.
    let r = app
        .client
        .post(&format!("{KEYS}/user/{op1_id}/revoke"), &root, &json!({}))
        .await;
    assert_error(&r, 404, "not_found");
    let r = app
        .client
        .post(
            &format!("{KEYS}/agent/{}/revoke", uuid::Uuid::new_v4()),
            &root,
            &json!({}),
        )
        .await;
    assert_error(&r, 404, "not_found");
    let r = app
        .client
        .post(&format!("{KEYS}/robot/{op1_id}/revoke"), &root, &json!({}))
        .await;
    assert_eq!(assert_error(&r, 400, "invalid_request")["field"], "kind");
    ok(&app.client.get("/api/agent/v1/accounts", gone).await);

    // Revoke the agent's key over HTTP: the next request with it is 401, over HTTP and MCP;
    // the agent's other key still works.
    let v = ok(&app
        .client
        .post(&format!("{KEYS}/agent/{op1_id}/revoke"), &root, &json!({}))
        .await);
    assert_eq!(v["result"], "changed");
    assert_eq!(v["key"]["id"], op1_id);
    let revoked_at = v["key"]["revoked_at"].as_str().unwrap().to_owned();
    assert!(!v.to_string().contains(gone.as_str()));
    assert_error(
        &app.client.get("/api/agent/v1/accounts", gone).await,
        401,
        "unauthorized",
    );
    let r = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "list_accounts", "arguments": {}}}))
            .bearer(gone),
        )
        .await;
    assert_eq!(r.status, 401, "{}", r.text());
    ok(&app.client.get("/api/agent/v1/accounts", kept).await);

    // Twice: unchanged, the first revoked_at kept; still refused.
    let v = ok(&app
        .client
        .post(&format!("{KEYS}/agent/{op1_id}/revoke"), &root, &json!({}))
        .await);
    assert_eq!(v["result"], "unchanged");
    assert_eq!(v["key"]["revoked_at"], revoked_at);
    assert_error(
        &app.client.get("/api/agent/v1/accounts", gone).await,
        401,
        "unauthorized",
    );

    // Revoke a personal key over MCP: the next request (HTTP or MCP) is 401.
    let result = mcp(
        &app,
        &root,
        "revoke_key",
        json!({"kind": "user", "id": ann_id}),
    )
    .await;
    assert_eq!(result["body"]["result"], "changed", "{result}");
    assert_error(
        &app.client.get("/api/user/v1/me", &ann).await,
        401,
        "unauthorized",
    );
    let r = app
        .client
        .send(
            Request::mcp(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
                .bearer(&ann),
        )
        .await;
    assert_eq!(r.status, 401, "{}", r.text());
    let result = mcp(
        &app,
        &root,
        "revoke_key",
        json!({"kind": "user", "id": ann_id}),
    )
    .await;
    assert_eq!(result["body"]["result"], "unchanged");
    let result = mcp(
        &app,
        &root,
        "revoke_key",
        json!({"kind": "agent", "id": ann_id}),
    )
    .await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["body"]["code"], "not_found");

    // The filters see them: revoked=true holds exactly the two, revoked=false the rest.
    let revoked = ok(&app.client.get(&format!("{KEYS}?revoked=true"), &root).await);
    let mut ids: Vec<&str> = revoked["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut want = vec![op1_id.as_str(), ann_id.as_str()];
    want.sort();
    assert_eq!(ids, want);
    let live = ok(&app
        .client
        .get(&format!("{KEYS}?revoked=false&limit=200"), &root)
        .await);
    assert_eq!(
        live["keys"].as_array().unwrap().len(),
        every_key(&app).len() - 2
    );
    assert!(
        live["keys"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["revoked_at"].is_null())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_admin_may_revoke_its_own_key_and_is_then_refused() {
    let app = spawn_app().await;
    let root = app.personal_key("root@example.com");
    let page = ok(&app
        .client
        .get(&format!("{KEYS}?kind=user&limit=200"), &root)
        .await);
    let id = record_of(&page, &root)["id"].as_str().unwrap().to_owned();
    let v = ok(&app
        .client
        .post(&format!("{KEYS}/user/{id}/revoke"), &root, &json!({}))
        .await);
    assert_eq!(v["result"], "changed");
    assert_error(&app.client.get(KEYS, &root).await, 401, "unauthorized");
}

#[tokio::test(flavor = "multi_thread")]
async fn of_two_revokes_at_once_one_revokes_and_the_other_sees_its_revoked_at() {
    use diesel::sql_types::BigInt;
    use diesel_async::{RunQueryDsl, SimpleAsyncConnection};
    #[derive(diesel::QueryableByName)]
    struct Pid {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let app = spawn_app().await;
    let root = app.personal_key("root@example.com");
    let page = ok(&app.client.get(&format!("{KEYS}?limit=200"), &root).await);
    let id = record_of(&page, &app.agent_key("op2"))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("{KEYS}/agent/{id}/revoke");

    // Hold the key's row so that both revokes are under way before either can write.
    let mut holder = app.connect().await;
    let pid: Pid = diesel::sql_query("SELECT pg_backend_pid()::bigint AS n")
        .get_result(&mut holder)
        .await
        .unwrap();
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM api_keys WHERE id = '{id}' FOR UPDATE;"
        ))
        .await
        .unwrap();
    let release = async {
        // The first waits on the holder, the second on the holder or on the first.
        let waiting = format!(
            "SELECT count(*) AS n FROM pg_stat_activity w \
             WHERE {holder} = ANY(pg_blocking_pids(w.pid)) \
                OR EXISTS (SELECT 1 FROM pg_stat_activity f \
                           WHERE {holder} = ANY(pg_blocking_pids(f.pid)) \
                             AND f.pid = ANY(pg_blocking_pids(w.pid)))",
            holder = pid.n
        );
        let started = std::time::Instant::now();
        while app.count(&waiting).await < 2 {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(20),
                "the two revokes never waited on the held row"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        holder.batch_execute("COMMIT").await.unwrap();
    };
    let empty = json!({});
    let (a, b, ()) = tokio::join!(
        app.client.post(&path, &root, &empty),
        app.client.post(&path, &root, &empty),
        release
    );
    let (a, b) = (ok(&a), ok(&b));
    let mut results = [a["result"].as_str(), b["result"].as_str()];
    results.sort();
    assert_eq!(results, [Some("changed"), Some("unchanged")], "{a}\n{b}");
    assert!(a["key"]["revoked_at"].is_string(), "{a}");
    assert_eq!(a["key"]["revoked_at"], b["key"]["revoked_at"], "{a}\n{b}");
    assert_error(
        &app.client
            .get("/api/agent/v1/accounts", &app.agent_key("op2"))
            .await,
        401,
        "unauthorized",
    );
}
