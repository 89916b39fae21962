//! Search quality, measured: the corpus of tests/data/wiki_quality.json (agency knowledge in
//! traditional Chinese, simplified Chinese, English and mixed) goes in through POST /wiki, each
//! of its queries through GET /wiki/search (limit 8). A query is a top-3 hit when any entry it
//! should find is among the first three results; its recall at 8 is the share of those entries
//! among the eight. Prints both figures for the set (and each miss), and asserts top-3 ≥ 90%.

use fleetdesk_tests::assert::ok;
use fleetdesk_tests::spawn_app;
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const CORPUS: &str = include_str!("../data/wiki_quality.json");

fn percent_encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_right_entry_is_in_the_top_3_for_at_least_90_percent_of_the_queries() {
    let app = spawn_app().await;
    let key = app.agent_key("op1");
    let corpus: Value = serde_json::from_str(CORPUS).expect("the corpus is JSON");
    let entries = corpus["entries"].as_array().expect("entries");
    let queries = corpus["queries"].as_array().expect("queries");
    assert!(entries.len() >= 50, "at least 50 entries");
    assert!(queries.len() >= 30, "at least 30 queries");
    for e in entries {
        let body = json!({
            "category": e["category"], "title": e["title"], "summary": e["summary"],
            "body": e["body"], "tags": e["tags"],
            "sources": [{"kind": "vault", "ref": format!("vault/{}.md", e["title"].as_str().unwrap()),
                         "title": e["title"]}],
        });
        let v = ok(&app.client.post(&format!("{AGENT}/wiki"), &key, &body).await);
        assert_eq!(v["status"], "canon", "{v}");
    }

    let (mut hits, mut recall) = (0usize, 0f64);
    let mut misses = Vec::new();
    for q in queries {
        let text = q["q"].as_str().unwrap();
        let expect: Vec<&str> = q["expect"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        let v = ok(&app
            .client
            .get(
                &format!("{AGENT}/wiki/search?q={}&limit=8", percent_encode(text)),
                &key,
            )
            .await);
        let got: Vec<&str> = v["results"]
            .as_array()
            .unwrap_or_else(|| panic!("{text}: {v}"))
            .iter()
            .map(|r| r["title"].as_str().unwrap())
            .collect();
        let hit = got.iter().take(3).any(|t| expect.contains(t));
        hits += usize::from(hit);
        recall += expect.iter().filter(|t| got.contains(t)).count() as f64 / expect.len() as f64;
        if !hit {
            misses.push(format!(
                "  {text} [{}]: expected {expect:?}, got {got:?}",
                q["kind"]
            ));
        }
    }
    let n = queries.len() as f64;
    let top3 = hits as f64 / n;
    println!(
        "wiki search quality: {} entries, {} queries; top-3 hit rate {:.1}% ({hits}/{}), recall at 8 {:.3}",
        entries.len(),
        queries.len(),
        top3 * 100.0,
        queries.len(),
        recall / n
    );
    for m in &misses {
        println!("{m}");
    }
    assert!(
        top3 >= 0.9,
        "top-3 hit rate {:.1}% under 90%:\n{}",
        top3 * 100.0,
        misses.join("\n")
    );
}
