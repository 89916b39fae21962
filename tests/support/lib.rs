//! Test support: a real server on a free port over a fresh schema (or database), a standard
//! tenant, an HTTP client ([`client`], and [`raw`] for bytes no client sends), and the real
//! `fleetdesk` binary ([`binary`]). Integration tests talk HTTP to the real app.

pub mod assert;
pub mod binary;
pub mod client;
pub mod meta;
pub mod model;
pub mod peers;
pub mod raw;

pub use client::{Client, Request, Response};
pub use fleetdesk_pg::testing::Isolation;

use fleetdesk::DEMO_TENANT;
use fleetdesk_api::Config;
use fleetdesk_pg::PgStore;
use fleetdesk_pg::testing::TestDb;
use fleetdesk_tenancy::ports::TenantStore;
use fleetdesk_tenancy::tenant_file::{ApplyReport, TenantFile};
use std::net::TcpListener;

/// The standard tenant of the tests: two organizations; the first has two workspaces and a
/// monthly credit limit of 100 (paid research).
///
/// - Acme / Taiwan: agents `op1`, `op2` (operator) and `bot` (community); persona Mia (op1)
///   with TW-T001 (threads, active, target 2), TW-I001 (instagram, active), TW-K001 (tiktok,
///   warming) and legacy code OLD1 on both TW-L001 (threads) and TW-L002 (tiktok);
///   persona Leo (op2) with TW-T002. Mia's cast: momo, lulu, kiki, bebe, coco, dodo, fifi
///   (seven, one past the limit of a post); Leo's: chef.
///   Community spaces: Mia fans (whatsapp 1203630@g.us; TW, track beauty, location taipei),
///   Beauty lounge (discord 998877, TW), Old group (whatsapp 555@g.us, archived). Products:
///   Serum and Night Mask on sale, Old Lipstick not. Wiki sources: Voice notes (beauty, op1),
///   Lessons (shared, unassigned, every 168 h), Food lore (food, op2).
/// - Acme / Japan: agent `jp1` with persona Yui and JP-T001; community space Yui fans
///   (discord jp-1, JP).
/// - Other Agency / Main: agent `other1` with persona Zoe and TW-T001 (the same code);
///   community space Zoe fans (whatsapp 777@g.us).
pub const TEST_TENANT: &str = r#"{
  "platform_admins": [{"email": "root@example.com", "name": "Root", "keys": 1}],
  "organizations": [
    {
      "name": "Acme",
      "monthly_credit_limit": 100,
      "members": [
        {"email": "ann@acme.test", "name": "Ann", "role": "agency", "keys": 1},
        {"email": "cli@brand.test", "name": "Cli", "role": "client", "review": true, "keys": 1},
        {"email": "cid@brand.test", "name": "Cid", "role": "client", "keys": 1}
      ],
      "workspaces": [
        {
          "name": "Taiwan",
          "ads_enabled": true,
          "ad_accounts": [{"id": "act_1001", "name": "Acme TW", "currency": "TWD",
                           "token_env": "ACME_META_TOKEN",
                           "instagram_user_id": "17841400000000001"}],
          "monthly_ad_cap": {"amount": 50000, "currency": "TWD"},
          "projects": [{"name": "beauty"}, {"name": "food"}],
          "agents": [
            {"name": "op1", "role": "operator", "keys": 2},
            {"name": "op2", "role": "operator", "keys": 1},
            {"name": "bot", "role": "community", "keys": 1}
          ],
          "personas": [
            {"name": "Mia", "project": "beauty", "agent": "op1", "bio": "b", "voice": "v",
             "cast": [
               {"code": "momo", "name": "Momo", "summary": "grey cat"},
               {"code": "lulu", "name": "Lulu"}, {"code": "kiki", "name": "Kiki"},
               {"code": "bebe", "name": "Bebe"}, {"code": "coco", "name": "Coco"},
               {"code": "dodo", "name": "Dodo"}, {"code": "fifi", "name": "Fifi"}
             ],
             "accounts": [
               {"code": "TW-T001", "platform": "threads", "state": "active", "daily_target": 2, "handle": "@mia"},
               {"code": "TW-I001", "platform": "instagram", "state": "active", "daily_target": 1},
               {"code": "TW-K001", "platform": "tiktok", "state": "warming", "daily_target": 1},
               {"code": "TW-L001", "platform": "threads", "state": "active", "legacy_code": "OLD1"},
               {"code": "TW-L002", "platform": "tiktok", "state": "active", "legacy_code": "OLD1"}
             ]},
            {"name": "Leo", "project": "food", "agent": "op2",
             "cast": [{"code": "chef", "name": "Chef"}],
             "accounts": [{"code": "TW-T002", "platform": "threads", "state": "active"}]}
          ],
          "community_spaces": [
            {"name": "Mia fans", "channel": "whatsapp", "external_id": "1203630@g.us",
             "market": "TW", "track": "beauty", "location": "taipei", "space_type": "fans",
             "language": "zh-TW"},
            {"name": "Beauty lounge", "channel": "discord", "external_id": "998877",
             "market": "TW"},
            {"name": "Old group", "channel": "whatsapp", "external_id": "555@g.us",
             "archived": true}
          ],
          "products": [
            {"name": "Serum", "on_sale": true, "summary": "保濕精華液 hydrating serum",
             "price": "NT$590", "url": "https://shop.test/serum"},
            {"name": "Night Mask", "on_sale": true, "summary": "晚安面膜 overnight mask"},
            {"name": "Old Lipstick", "on_sale": false, "summary": "discontinued lipstick"}
          ],
          "wiki_sources": [
            {"kind": "notion", "name": "Voice notes", "locator": "https://notion.so/acme/voice",
             "project": "beauty", "agent": "op1", "every_hours": 24, "scope_note": "voice and formats"},
            {"kind": "vault", "name": "Lessons", "locator": "vault/lessons", "every_hours": 168},
            {"kind": "other", "name": "Food lore", "locator": "https://docs.test/food",
             "project": "food", "agent": "op2"}
          ]
        },
        {
          "name": "Japan",
          "projects": [{"name": "beauty"}],
          "agents": [{"name": "jp1", "role": "operator", "keys": 1}],
          "personas": [
            {"name": "Yui", "agent": "jp1",
             "accounts": [{"code": "JP-T001", "platform": "threads", "state": "active", "market": "JP"}]}
          ],
          "community_spaces": [
            {"name": "Yui fans", "channel": "discord", "external_id": "jp-1", "market": "JP"}
          ]
        }
      ]
    },
    {
      "name": "Other Agency",
      "members": [{"email": "olga@other.test", "name": "Olga", "role": "agency", "keys": 1}],
      "workspaces": [
        {
          "name": "Main",
          "projects": [{"name": "general"}],
          "agents": [{"name": "other1", "role": "operator", "keys": 1}],
          "personas": [
            {"name": "Zoe", "agent": "other1",
             "accounts": [{"code": "TW-T001", "platform": "threads", "state": "active"}]}
          ],
          "community_spaces": [
            {"name": "Zoe fans", "channel": "whatsapp", "external_id": "777@g.us"}
          ]
        }
      ]
    }
  ]
}"#;

/// A running server over its own schema (or database).
pub struct TestApp {
    pub client: Client,
    pub base: String,
    pub store: PgStore,
    pub db: TestDb,
    pub tenant: ApplyReport,
    pub data_dir: std::path::PathBuf,
    /// The services the server runs (its metrics, its store's health), for a test that starts
    /// a second listener over them.
    pub ctx: fleetdesk_api::Ctx,
    server: actix_web::dev::ServerHandle,
}

/// Options for [`spawn_app_with`].
#[derive(Debug, Clone)]
pub struct AppOptions {
    pub rate_limit_per_minute: i64,
    /// `--trusted-proxy`.
    pub trusted_proxies: Vec<std::net::IpAddr>,
    pub tenant: Option<&'static str>,
    /// A schema of its own in the shared test database (the default), or a database of its
    /// own for a test that runs `pg_dump` on it or takes it away.
    pub isolation: Isolation,
    /// Connections in the app's pool.
    pub pool_size: usize,
    /// The ad research provider's lookups per day; none by default.
    pub ad_research_daily_quota: Option<i64>,
    /// Webhooks may use http and reach this machine (`--allow-http-webhooks`,
    /// `--allow-private-webhooks`): for a local receiver.
    pub local_webhooks: bool,
    /// The embedding model search reorders by; none by default (words alone).
    pub embedder: Option<std::sync::Arc<dyn fleetdesk_wiki::meaning::Embedder>>,
}

impl Default for AppOptions {
    fn default() -> Self {
        AppOptions {
            rate_limit_per_minute: 10_000,
            trusted_proxies: Vec::new(),
            tenant: Some(TEST_TENANT),
            isolation: Isolation::from_env(Isolation::Schema),
            pool_size: 8,
            ad_research_daily_quota: None,
            local_webhooks: false,
            embedder: None,
        }
    }
}

/// Starts the app with the standard tenant. Needs a multi-threaded tokio runtime:
/// `#[tokio::test(flavor = "multi_thread")]`.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(AppOptions::default()).await
}

/// [`spawn_app`] over a database of its own: for a test that runs `pg_dump` on the app's
/// database or takes it away under the running app.
pub async fn spawn_app_in_own_database() -> TestApp {
    spawn_app_with(AppOptions {
        isolation: Isolation::Database,
        ..Default::default()
    })
    .await
}

pub async fn spawn_app_with(options: AppOptions) -> TestApp {
    let started = std::time::Instant::now();
    let db = TestDb::isolated(options.isolation)
        .await
        .expect("a test database (is PostgreSQL at 127.0.0.1:5432?)");
    let made = started.elapsed();
    let data_dir = std::env::temp_dir().join(format!("fleetdesk-test-{}", db.name()));
    let config = Config {
        rate_limit_per_minute: options.rate_limit_per_minute,
        base_url: None,
        ad_research_daily_quota: options.ad_research_daily_quota,
        trusted_proxies: options.trusted_proxies.clone(),
        allow_http_webhooks: options.local_webhooks,
        allow_private_webhooks: options.local_webhooks,
    };
    let (state, store) = fleetdesk::compose(
        &db.url,
        &data_dir,
        config,
        options.pool_size,
        true,
        options.embedder.clone(),
    )
    .await
    .expect("compose");
    let tenant = match options.tenant {
        Some(json) => store
            .apply(&TenantFile::parse(json).expect("tenant file"))
            .await
            .expect("apply tenant"),
        None => ApplyReport::default(),
    };
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let ctx = state.ctx.clone();
    let server = fleetdesk_http::server(state, listener, 2).expect("server");
    let handle = server.handle();
    tokio::spawn(server);
    timing(&format!(
        "setup {:?} db_ms {} total_ms {}",
        options.isolation,
        made.as_millis(),
        started.elapsed().as_millis()
    ));
    TestApp {
        client: Client::new(&base),
        base,
        store,
        db,
        tenant,
        data_dir,
        ctx,
        server: handle,
    }
}

impl TestApp {
    /// The first key of an agent of the tenant, by name.
    pub fn agent_key(&self, name: &str) -> String {
        self.agent_keys(name)
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no key for agent {name}"))
    }

    pub fn agent_keys(&self, name: &str) -> Vec<String> {
        self.agent(name).map(|a| a.keys.clone()).unwrap_or_default()
    }

    pub fn agent_id(&self, name: &str) -> uuid::Uuid {
        self.agent(name).expect("agent").id
    }

    fn workspaces(&self) -> impl Iterator<Item = &fleetdesk_tenancy::tenant_file::WorkspaceReport> {
        self.tenant.organizations.iter().flat_map(|o| &o.workspaces)
    }

    fn agent(&self, name: &str) -> Option<&fleetdesk_tenancy::tenant_file::AgentReport> {
        self.workspaces()
            .flat_map(|w| &w.agents)
            .find(|a| a.name == name)
    }

    /// The personal key of a member or platform admin, by email.
    pub fn personal_key(&self, email: &str) -> String {
        self.tenant
            .platform_admins
            .iter()
            .chain(self.tenant.organizations.iter().flat_map(|o| &o.members))
            .find(|m| m.email == email)
            .and_then(|m| m.keys.first().cloned())
            .unwrap_or_else(|| panic!("no key for {email}"))
    }

    /// A workspace of the tenant, by name.
    pub fn workspace_id(&self, name: &str) -> uuid::Uuid {
        self.workspaces()
            .find(|w| w.name == name)
            .expect("workspace")
            .id
    }

    /// The id of the community space `name` (of any workspace).
    pub fn space_id(&self, name: &str) -> uuid::Uuid {
        self.workspaces()
            .flat_map(|w| &w.community_spaces)
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no space {name}"))
            .space_id
    }

    pub fn persona_id(&self, name: &str) -> uuid::Uuid {
        self.workspaces()
            .flat_map(|w| &w.personas)
            .find(|p| p.name == name)
            .expect("persona")
            .id
    }

    /// Runs SQL against the app's database (for setting up what no endpoint does yet and for
    /// checking what was written).
    pub async fn sql(&self, statement: &str) {
        sql_at(&self.db.url, statement).await
    }

    /// A single count from SQL (a query returning one bigint column named `n`).
    pub async fn count(&self, query: &str) -> i64 {
        count_at(&self.db.url, query).await
    }

    /// A direct connection to the app's database.
    pub async fn connect(&self) -> diesel_async::AsyncPgConnection {
        use diesel_async::AsyncConnection;
        diesel_async::AsyncPgConnection::establish(&self.db.url)
            .await
            .expect("connect to the test database")
    }

    /// Applies another tenant file to the running app's database.
    pub async fn apply(&self, json: &str) -> ApplyReport {
        self.store
            .apply(&TenantFile::parse(json).expect("tenant file"))
            .await
            .expect("apply")
    }

    /// An MCP `tools/call` of `name` with `key`: the tool result with its REST body under
    /// `body` ([`assert::tool_result`]).
    pub async fn call_tool(
        &self,
        key: &str,
        name: &str,
        arguments: serde_json::Value,
    ) -> serde_json::Value {
        let res = self
            .client
            .send(
                client::Request::mcp(&serde_json::json!({"jsonrpc": "2.0", "id": 1,
                    "method": "tools/call", "params": {"name": name, "arguments": arguments}}))
                .bearer(key),
            )
            .await;
        assert_eq!(res.status, 200, "{name}: {}", res.text());
        assert::tool_result(name, &res.json())
    }

    /// `GET /api/user/v1/today` as `email` reads it: the workspace named `workspace`.
    pub async fn today_workspace(&self, email: &str, workspace: &str) -> serde_json::Value {
        let res = self
            .client
            .get("/api/user/v1/today", &self.personal_key(email))
            .await;
        assert_eq!(res.status, 200, "{}", res.text());
        let day = res.json();
        let id = self.workspace_id(workspace).to_string();
        let found = day["workspaces"]
            .as_array()
            .expect("workspaces")
            .iter()
            .find(|w| w["id"] == id.as_str())
            .cloned();
        found.unwrap_or_else(|| panic!("no workspace {workspace} in {day}"))
    }

    /// The events `agent`'s feed answers for `query` (`types=…`, up to 200, without waiting),
    /// each checked to be of the app's Taiwan workspace.
    pub async fn feed(&self, agent: &str, query: &str) -> Vec<serde_json::Value> {
        let path = format!("/api/agent/v1/events?limit=200&{query}");
        let res = self.client.get(&path, &self.agent_key(agent)).await;
        assert_eq!(res.status, 200, "{path}: {}", res.text());
        let events = res.json()["events"].as_array().expect("events").clone();
        let workspace = self.workspace_id("Taiwan").to_string();
        for e in &events {
            assert_eq!(e["workspace_id"], workspace.as_str(), "{e}");
        }
        events
    }

    /// A research request of `agent`'s for `items` (products), quoted, approved on behalf of
    /// Ann (agency) and worked to the end by the sandbox provider: its id. An item ending in
    /// 404 is not found, in 500 fails, any other is found.
    pub async fn finished_research(&self, agent: &str, items: &[&str]) -> String {
        let key = self.agent_key(agent);
        let quote = self
            .client
            .post(
                "/api/agent/v1/ad-research/quote",
                &key,
                &serde_json::json!({"kind": "product_brief", "items": items}),
            )
            .await;
        assert_eq!(quote.status, 201, "quote: {}", quote.text());
        let id = quote.json()["request_id"]
            .as_str()
            .expect("request_id")
            .to_owned();
        let approve = self
            .client
            .post(
                &format!("/api/agent/v1/ad-research/{id}/approve"),
                &key,
                &serde_json::json!({"on_behalf_of": {"name": "Ann", "role": "agency"},
                                    "origin": {"platform": "cli"}}),
            )
            .await;
        assert_eq!(approve.status, 200, "approve: {}", approve.text());
        fleetdesk::worker::Worker::new(self.store.clone())
            .research_provider(
                std::sync::Arc::new(fleetdesk_vendors::sandbox::SandboxResearch),
                None,
            )
            .run_due()
            .await
            .expect("the research work");
        id
    }

    /// Another running instance of the service over the same database, with its own pool,
    /// rate-limit leases and instance lock: its client and the handle that stops it.
    pub async fn another_instance(
        &self,
        rate_limit_per_minute: i64,
    ) -> (Client, actix_web::dev::ServerHandle) {
        let config = Config {
            rate_limit_per_minute,
            ..Config::default()
        };
        let dir = self
            .data_dir
            .join(format!("instance-{}", uuid::Uuid::new_v4().simple()));
        let (state, _store) = fleetdesk::compose(&self.db.url, &dir, config, 4, true, None)
            .await
            .expect("compose another instance");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let server = fleetdesk_http::server(state, listener, 1).expect("server");
        let handle = server.handle();
        tokio::spawn(server);
        (Client::new(&base), handle)
    }

    pub async fn stop(self) {
        self.server.stop(true).await;
    }
}

/// The per-test data directory (stored media) goes with the test, as its database does.
impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// With `FLEETDESK_TEST_TIMINGS=<file>`, appends one line of set-up timing to it.
fn timing(line: &str) {
    if let Ok(path) = std::env::var("FLEETDESK_TEST_TIMINGS") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// Runs one SQL statement on the database at `url` (a served binary's, say).
pub async fn sql_at(url: &str, statement: &str) {
    use diesel_async::{AsyncConnection, RunQueryDsl};
    let mut conn = diesel_async::AsyncPgConnection::establish(url)
        .await
        .expect("connect to the test database");
    diesel::sql_query(statement)
        .execute(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"));
}

/// A single count from SQL on the database at `url` (a query returning one bigint column
/// named `n`).
pub async fn count_at(url: &str, query: &str) -> i64 {
    use diesel_async::{AsyncConnection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = diesel_async::AsyncPgConnection::establish(url)
        .await
        .expect("connect to the test database");
    let row: N = diesel::sql_query(query)
        .get_result(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    row.n
}

/// Keeps the demo tenant reachable for tests of the binary.
pub fn demo_tenant() -> &'static str {
    DEMO_TENANT
}
