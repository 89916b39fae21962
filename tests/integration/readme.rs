//! README.md's walk-through, "The first minutes", typed as a new user would: the real binary
//! starts on an empty database, prints the demo keys (and whose each is), and every ```sh
//! block of that section runs in order in one bash, with the keys and the address from the
//! printout in place of `fda_...`, `fdp_...` and `http://127.0.0.1:8080`. Any 4xx or 5xx
//! stops it (the README's `api` is `curl --fail-with-body`, run under `set -euo pipefail`),
//! so the README cannot drift from the service.

use fleetdesk_pg::testing::TestDb;
use fleetdesk_tenancy::tenant_file::TenantFile;
use fleetdesk_tests::binary::{
    Proc, SERVE, TempDir, demo_report, fleetdesk_over, serve, workspace_root,
};
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const SECTION: &str = "## The first minutes";
const README_BASE: &str = "http://127.0.0.1:8080";

/// The ```sh blocks of one `## ` section of README.md, in order.
fn sh_blocks(readme: &str, heading: &str) -> Vec<String> {
    code_blocks(readme, heading, "sh")
}

/// The fenced blocks in `lang` of the section under `heading` (up to the next `##`/`###`).
fn code_blocks(readme: &str, heading: &str, lang: &str) -> Vec<String> {
    let start = readme
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("README.md has no section {heading:?}"));
    let body = &readme[start + heading.len() + 2..];
    let end = ["\n## ", "\n### "]
        .iter()
        .filter_map(|h| body.find(h))
        .min()
        .unwrap_or(body.len());
    let fence = format!("```{lang}\n");
    let mut blocks = Vec::new();
    let mut rest = &body[..end];
    while let Some(open) = rest.find(&fence) {
        let code = &rest[open + fence.len()..];
        let close = code
            .find("```")
            .unwrap_or_else(|| panic!("an unclosed ```{lang} block in {heading:?}"));
        blocks.push(code[..close].to_owned());
        rest = &code[close + 3..];
    }
    blocks
}

/// The value after `export NAME=` in the printout.
fn exported(banner: &str, name: &str) -> String {
    let prefix = format!("export {name}=");
    banner
        .lines()
        .find_map(|l| l.trim().strip_prefix(&prefix))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("the printout has no `{prefix}` line:\n{banner}"))
        .to_owned()
}

/// The printout's line about a key (`<key>  <whose>`), under "Whose keys these are:".
fn whose(banner: &str, key: &str) -> String {
    let section = &banner[banner
        .find("Whose keys these are:")
        .unwrap_or_else(|| panic!("the printout does not say whose the keys are:\n{banner}"))..];
    section
        .lines()
        .find_map(|l| l.trim().strip_prefix(key))
        .unwrap_or_else(|| panic!("the printout does not say whose {key} is:\n{banner}"))
        .trim()
        .to_owned()
}

/// Each printed key says whose it is: an agent's name and role, a member's name, email and
/// role, a platform admin's name and email.
fn assert_printout_names_every_key(banner: &str) {
    let report = demo_report(banner).expect("the demo report");
    let demo = TenantFile::parse(fleetdesk_tests::demo_tenant()).expect("the demo tenant");
    let keys = |v: &Value| -> Vec<String> {
        v["keys"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect()
    };
    let mut checked = 0;
    for org in report["organizations"].as_array().into_iter().flatten() {
        for ws in org["workspaces"].as_array().into_iter().flatten() {
            for agent in ws["agents"].as_array().into_iter().flatten() {
                for key in keys(agent) {
                    let line = whose(banner, &key);
                    let name = agent["name"].as_str().unwrap_or_default();
                    let role = agent["role"].as_str().unwrap_or_default();
                    assert!(
                        line.contains(&format!("agent {name},")) && line.contains(role),
                        "key of agent {name} ({role}) is described as {line:?}"
                    );
                    checked += 1;
                }
            }
        }
        for member in org["members"].as_array().into_iter().flatten() {
            let email = member["email"].as_str().unwrap_or_default();
            let spec = demo
                .organizations
                .iter()
                .flat_map(|o| &o.members)
                .find(|m| m.email.eq_ignore_ascii_case(email))
                .unwrap_or_else(|| panic!("{email} is not in the demo tenant"));
            for key in keys(member) {
                let line = whose(banner, &key);
                assert!(
                    line.contains(&spec.name)
                        && line.contains(email)
                        && line.contains(&format!("role {}", spec.role.as_str())),
                    "key of {} <{email}> ({}) is described as {line:?}",
                    spec.name,
                    spec.role.as_str()
                );
                checked += 1;
            }
        }
    }
    for admin in report["platform_admins"].as_array().into_iter().flatten() {
        let email = admin["email"].as_str().unwrap_or_default();
        for key in keys(admin) {
            let line = whose(banner, &key);
            assert!(
                line.contains("platform admin") && line.contains(email),
                "key of platform admin {email} is described as {line:?}"
            );
            checked += 1;
        }
    }
    // writer-1, community-bot, Ann, Cli and Root each hold one key.
    assert_eq!(checked, 5, "keys described:\n{banner}");
    // The keys the walk-through uses are named beside their export lines.
    let agent = exported(banner, "FLEETDESK_AGENT_KEY");
    assert!(
        whose(banner, &agent).contains("agent writer-1, role operator"),
        "FLEETDESK_AGENT_KEY is not writer-1's:\n{banner}"
    );
    let person = exported(banner, "FLEETDESK_PERSONAL_KEY");
    assert!(
        whose(banner, &person).contains("member Ann <ann@demo.test>, role agency"),
        "FLEETDESK_PERSONAL_KEY is not Ann's:\n{banner}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_readme_walk_through_runs_against_a_fresh_start() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let blocks = sh_blocks(&readme, SECTION);
    assert!(
        blocks.len() >= 2,
        "expected the walk-through and the MCP blocks in {SECTION:?}, found {}",
        blocks.len()
    );

    let db = TestDb::new().await.expect("a test database");
    let data = TempDir::new("readme");
    let server = serve(
        fleetdesk_over(SERVE, &db, data.path()),
        Duration::from_secs(90),
    )
    .await;
    let base = format!("http://{}", server.client.host());
    let banner = server.banner;
    assert_printout_names_every_key(&banner);
    assert!(
        banner.contains(&format!("{base}/docs")),
        "the printout does not point at the API documentation:\n{banner}"
    );

    let agent_key = exported(&banner, "FLEETDESK_AGENT_KEY");
    let personal_key = exported(&banner, "FLEETDESK_PERSONAL_KEY");
    let mut script = blocks.join("\n");
    for (placeholder, value) in [
        ("fda_...", agent_key.as_str()),
        ("fdp_...", personal_key.as_str()),
        (README_BASE, base.as_str()),
    ] {
        assert!(
            script.contains(placeholder),
            "the walk-through no longer contains {placeholder:?}: update this test with it"
        );
        script = script.replace(placeholder, value);
    }

    // A user's shell in an empty directory (the walk-through writes momo.jpg there).
    let work = TempDir::new("readme");
    let mut bash = Command::new("bash");
    bash.args(["-euo", "pipefail", "-c", &script])
        .current_dir(work.path())
        .env_remove("FLEETDESK_AGENT_KEY")
        .env_remove("FLEETDESK_PERSONAL_KEY")
        .env_remove("BASE");
    let mut run = Proc::spawn(bash);
    // The walk-through finishes within 3 minutes.
    let status = run.finish(Duration::from_secs(180)).await;
    let out = run.stdout();
    let err = run.stderr();
    assert!(
        status.success(),
        "the README walk-through failed ({status}) against a fresh start.\n\
         --- stdout ---\n{out}\n--- stderr ---\n{err}\n--- fleetdesk ---\n{}",
        server.proc.output()
    );

    // Each step did what the README says it does.
    let answers: Vec<Value> = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let find = |what: &str, pred: &dyn Fn(&Value) -> bool| -> Value {
        answers
            .iter()
            .find(|a| pred(a))
            .cloned()
            .unwrap_or_else(|| panic!("no answer shows {what}:\n{out}"))
    };
    let ban = find("the ban", &|a| a["code"] == "TW-I001");
    assert_eq!(ban["state"], "banned", "{ban}");
    assert_eq!(ban["decision"]["status"], "open", "{ban}");
    let draft = find("the draft", &|a| a["draft"].is_object());
    assert_eq!(draft["draft"]["status"], "internal_review", "{draft}");
    assert_eq!(
        draft["draft"]["media"], 1,
        "the draft has the image: {draft}"
    );
    assert_eq!(draft["draft"]["stocked"], false, "{draft}");
    let id = draft["draft"]["id"].clone();
    let approved = find("the approval", &|a| a["post"]["status"] == "approved");
    assert_eq!(approved["post"]["id"], id, "{approved}");
    let report = find("the report", &|a| a["report_id"].is_string());
    assert_eq!(report["results"][0]["post_id"], id, "{report}");
    assert_eq!(report["results"][0]["status"], "published", "{report}");
    let metrics = find("the metrics", &|a| a["posts_written"].is_number());
    assert_eq!(metrics["posts_written"], 1, "{metrics}");
    assert_eq!(metrics["refused"], serde_json::json!([]), "{metrics}");
    find("the heartbeat", &|a| a["run"]["run_id"] == "round-1");
    let tools = find("the MCP tools", &|a| a["result"]["tools"].is_array());
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == "list_accounts")),
        "{tools}"
    );
    let call = find("the MCP call", &|a| a["id"] == 3);
    assert_eq!(call["result"]["isError"], false, "{call}");
}

/// `/` points at the documentation, the descriptions and MCP; `/docs` is Scalar's reference,
/// its script served by fleetdesk itself (no CDN), over `/openapi.json`.
#[tokio::test(flavor = "multi_thread")]
async fn the_front_page_and_the_api_docs_are_served_from_the_binary() {
    use fleetdesk_tests::client::Request;
    let app = fleetdesk_tests::spawn_app().await;

    let index = app.client.send(Request::new("GET", "/")).await;
    assert_eq!(index.status, 200);
    assert!(
        index
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{:?}",
        index.headers
    );
    let page = String::from_utf8_lossy(&index.body);
    for link in [
        "href=\"/docs\"",
        "href=\"/openapi.json\"",
        "href=\"/openapi-agent.json\"",
        "/api/mcp",
    ] {
        assert!(page.contains(link), "GET / does not show {link}:\n{page}");
    }

    let docs = app.client.send(Request::new("GET", "/docs")).await;
    assert_eq!(docs.status, 200);
    assert!(
        docs.header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{:?}",
        docs.headers
    );
    let html = String::from_utf8_lossy(&docs.body).into_owned();
    let script = html
        .split("<script src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("/docs loads no script:\n{html}"));
    assert!(
        script.starts_with('/'),
        "/docs loads its script from elsewhere ({script}): no CDN is reachable"
    );
    assert!(html.contains("data-url=\"/openapi.json\""), "{html}");
    assert!(!html.contains("https://"), "/docs refers outside:\n{html}");
    // The page may reach only this service.
    let csp = docs.header("content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("connect-src 'self'"),
        "/docs Content-Security-Policy: {csp:?}"
    );

    let js = app.client.send(Request::new("GET", script)).await;
    assert_eq!(js.status, 200, "GET {script}");
    assert!(
        js.header("content-type")
            .is_some_and(|t| t.starts_with("text/javascript")),
        "{script} content-type: {:?}",
        js.header("content-type")
    );
    assert!(
        js.body.len() > 1_000_000,
        "{script} is {} bytes: not the Scalar bundle",
        js.body.len()
    );
    let text = String::from_utf8_lossy(&js.body);
    assert!(
        text.contains("createApiReference") && text.contains("@scalar/api-reference"),
        "{script} is not Scalar's API reference"
    );

    // Gzipped for a browser that takes it: the same script, a fraction of the bytes, and a
    // cache told that the answer depends on Accept-Encoding.
    let browser = Request::new("GET", script).header("Accept-Encoding", "gzip, deflate, br");
    let zipped = app.client.send(browser).await;
    assert_eq!(zipped.status, 200);
    assert_eq!(
        zipped.header("content-encoding"),
        Some("gzip"),
        "{:?}",
        zipped.headers
    );
    assert_eq!(zipped.header("vary"), Some("Accept-Encoding"));
    assert_eq!(js.header("vary"), Some("Accept-Encoding"));
    assert_eq!(js.header("content-encoding"), None);
    let mut unzipped = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&zipped.body[..]),
        &mut unzipped,
    )
    .expect("a gzip body");
    assert_eq!(unzipped, js.body, "the gzipped script is the script");
    assert!(
        zipped.body.len() * 3 < js.body.len(),
        "{} bytes",
        zipped.body.len()
    );
    let refused = Request::new("GET", script).header("Accept-Encoding", "gzip;q=0, identity");
    let plain = app.client.send(refused).await;
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.body, js.body);

    // The icon, linked from the pages and where browsers ask for it on their own.
    for path in ["/favicon.svg", "/favicon.ico"] {
        let icon = app.client.send(Request::new("GET", path)).await;
        assert_eq!(icon.status, 200, "GET {path}");
        assert_eq!(icon.header("content-type"), Some("image/svg+xml"));
        assert!(
            icon.body.starts_with(b"<svg") && icon.body.len() < 2048,
            "{path}"
        );
    }
    let sign_in = app
        .client
        .send(Request::new("GET", "/dashboard/sign-in"))
        .await;
    for (what, body) in [
        ("/", &index.body),
        ("/docs", &docs.body),
        ("the dashboard", &sign_in.body),
    ] {
        let page = String::from_utf8_lossy(body);
        assert!(
            page.contains(r#"<link rel="icon" href="/favicon.svg" type="image/svg+xml">"#),
            "{what} links no icon:\n{page}"
        );
    }

    // HEAD answers like GET, without the body (read raw: the test client expects a body).
    for path in ["/", "/docs", script] {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tcp = tokio::net::TcpStream::connect(app.client.host())
            .await
            .expect("connect");
        let request = format!(
            "HEAD {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            app.client.host()
        );
        tcp.write_all(request.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        tcp.read_to_end(&mut answer).await.expect("read");
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "HEAD {path}: {answer}");
        let (_, body) = answer.split_once("\r\n\r\n").expect("headers end");
        assert!(
            body.is_empty(),
            "HEAD {path} sent a body of {} bytes",
            body.len()
        );
    }
}

/// The README's example tenant file is one `fleetdesk admin apply` takes.
#[test]
fn the_readme_tenant_file_example_parses() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let blocks = code_blocks(&readme, "### The tenant file", "json");
    assert_eq!(blocks.len(), 1, "one example in \"The tenant file\"");
    let file = TenantFile::parse(&blocks[0])
        .unwrap_or_else(|e| panic!("the README's tenant file example is refused: {e}"));
    assert_eq!(file.organizations.len(), 1);
    assert_eq!(
        file.organizations[0].workspaces[0].personas[0]
            .accounts
            .len(),
        1
    );
}
