//! Ranking by meaning through HTTP, with a model whose vectors a test can reason about: the
//! background job makes each entry's vector of its version; the agents' search, the Personal
//! API's and the community assistant's reorder what the words found by it; an entry changed
//! since keeps its place by words until the job runs again; an instance without a model takes
//! no embedding job. (tests/integration/wiki_quality.rs measures the real model.)

use fleetdesk::worker::{EMBED_JOB, Worker};
use fleetdesk_kernel::BoxFuture;
use fleetdesk_tests::assert::ok;
use fleetdesk_tests::{AppOptions, TestApp, spawn_app_with};
use fleetdesk_wiki::meaning::{Embedder, Embedding};
use fleetdesk_wiki::ports::EmbeddingsRepo;
use serde_json::{Value, json};
use std::sync::Arc;

const AGENT: &str = "/api/agent/v1";
const USER: &str = "/api/user/v1";

/// A model of three directions: crises (angry, backlash), food, and anything else a little.
#[derive(Debug)]
struct Topics;

impl Topics {
    fn of(text: &str) -> Embedding {
        let has = |words: &[&str]| words.iter().any(|w| text.contains(w)) as u8 as f32;
        Embedding::from_floats(&[has(&["angry", "backlash"]), has(&["food"]), 0.1])
            .expect("a vector")
    }
}

impl Embedder for Topics {
    fn model(&self) -> &str {
        "topics"
    }
    fn query<'a>(&'a self, text: &'a str) -> BoxFuture<'a, anyhow::Result<Embedding>> {
        Box::pin(async move { Ok(Topics::of(text)) })
    }
    fn passages<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, anyhow::Result<Vec<Embedding>>> {
        Box::pin(async move { Ok(texts.iter().map(|t| Topics::of(t)).collect()) })
    }
}

fn model() -> Arc<dyn Embedder> {
    Arc::new(Topics)
}

/// Four entries every one of which has "post": by words the crisis entry, which has it once in
/// its body, comes last.
async fn four_entries(app: &TestApp) {
    for (title, body) in [
        ("Post timing", "post post post at noon"),
        ("Post formats", "post post carousels"),
        ("Post hashtags", "post post three tags"),
        (
            "Pause the queue",
            "when a post draws backlash, pause everything queued",
        ),
    ] {
        let body = json!({"category": "playbook", "title": title, "summary": "", "body": body,
                          "tags": ["community"],
                          "sources": [{"kind": "agent", "ref": "tests"}]});
        let v = ok(&app
            .client
            .post(&format!("{AGENT}/wiki"), &app.agent_key("op1"), &body)
            .await);
        assert_eq!(v["status"], "canon", "{v}");
    }
}

fn titles(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|e| e["title"].as_str().expect("title").to_owned())
        .collect()
}

async fn agents_search(app: &TestApp, q: &str, limit: u32) -> Vec<String> {
    let v = ok(&app
        .client
        .get(
            &format!(
                "{AGENT}/wiki/search?q={}&limit={limit}",
                q.replace(' ', "%20")
            ),
            &app.agent_key("op1"),
        )
        .await);
    titles(&v["results"])
}

/// Runs the embedding job of the minute `minutes` from now, as an instance with `model` does.
async fn embed(app: &TestApp, minutes: i64) -> usize {
    let worker = Worker::new(app.store.clone())
        .embedder(Some(model()))
        .with_clock(move || jiff::Timestamp::now() + jiff::SignedDuration::from_mins(minutes));
    worker.schedule_embedding().await.expect("enqueued");
    worker.run_due().await.expect("ran")
}

#[tokio::test(flavor = "multi_thread")]
async fn search_reorders_by_meaning_once_the_job_made_the_vectors() {
    let app = spawn_app_with(AppOptions {
        embedder: Some(model()),
        ..AppOptions::default()
    })
    .await;
    four_entries(&app).await;
    // No vector yet: the words' order, the crisis entry last.
    let by_words = agents_search(&app, "angry post", 8).await;
    assert_eq!(by_words.len(), 4);
    assert_eq!(by_words[3], "Pause the queue", "{by_words:?}");
    assert_eq!(
        app.store.unembedded(10).await.expect("listed").len(),
        4,
        "every entry waits for its vector"
    );

    assert_eq!(embed(&app, 0).await, 1, "one embedding job ran");
    assert!(app.store.unembedded(10).await.expect("listed").is_empty());
    // Fourth by words, first by meaning: third (1/5 + 0.5/2 beats 1/4 + 0.5/5), and in a page
    // of three.
    let reordered = [&by_words[0], &by_words[1], "Pause the queue", &by_words[2]];
    assert_eq!(agents_search(&app, "angry post", 8).await, reordered);
    assert_eq!(agents_search(&app, "angry post", 3).await, reordered[..3]);
    // The words still say what matched; the score falls with the rank.
    let v = ok(&app
        .client
        .get(
            &format!("{AGENT}/wiki/search?q=angry%20post"),
            &app.agent_key("op1"),
        )
        .await);
    let results = v["results"].as_array().unwrap();
    assert!(
        results.iter().all(|r| r["matched"] == json!(["post"])),
        "{v}"
    );
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // A query the model sees no crisis in leaves the crisis entry last.
    assert_eq!(
        agents_search(&app, "post", 8)
            .await
            .last()
            .map(String::as_str),
        Some("Pause the queue")
    );

    // The Personal API's search and the community assistant's reorder the same way.
    let taiwan = app.workspace_id("Taiwan");
    let v = ok(&app
        .client
        .get(
            &format!("{USER}/wiki/search?workspace={taiwan}&q=angry%20post&limit=3"),
            &app.personal_key("ann@acme.test"),
        )
        .await);
    assert_eq!(titles(&v["results"]), reordered[..3]);
    let space = app.space_id("Mia fans");
    let v = ok(&app
        .client
        .post(
            &format!("{AGENT}/community/wiki"),
            &app.agent_key("bot"),
            &json!({"space_id": space, "query": "angry post", "limit": 3}),
        )
        .await);
    assert_eq!(titles(&v["entries"]), reordered[..3]);

    // A new version keeps no vector of the old one: by words until the job runs again.
    let body = json!({"category": "playbook", "title": "Pause the queue", "summary": "",
                      "body": "when a post draws backlash, pause everything queued; then reply",
                      "tags": ["community"], "sources": [{"kind": "agent", "ref": "tests"}]});
    ok(&app
        .client
        .post(&format!("{AGENT}/wiki"), &app.agent_key("op1"), &body)
        .await);
    let waiting = app.store.unembedded(10).await.expect("listed");
    assert_eq!(
        waiting
            .iter()
            .map(|e| (e.title.as_str(), e.version))
            .collect::<Vec<_>>(),
        [("Pause the queue", 2)]
    );
    assert_eq!(agents_search(&app, "angry post", 8).await, by_words);
    // This minute's job is done: another minute's makes it (the one before, due already).
    assert_eq!(embed(&app, 0).await, 0);
    assert_eq!(embed(&app, -1).await, 1);
    assert_eq!(agents_search(&app, "angry post", 8).await, reordered);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vector_is_stored_only_for_the_version_it_was_made_from_and_by_its_model() {
    let app = spawn_app_with(AppOptions::default()).await;
    four_entries(&app).await;
    let waiting = app.store.unembedded(2).await.expect("listed");
    assert_eq!(waiting.len(), 2, "at most the limit");
    let one = &waiting[0];
    let made = |version| vec![(one.id, version, Topics::of("angry"))];
    assert_eq!(
        app.store
            .store_embeddings("topics", &made(one.version + 1))
            .await
            .expect("stored"),
        0,
        "a version the entry is not at"
    );
    assert_eq!(
        app.store
            .store_embeddings("topics", &made(one.version))
            .await
            .expect("stored"),
        1
    );
    assert_eq!(app.store.unembedded(10).await.expect("listed").len(), 3);
    // Another model's vectors are forgotten, so that the new model makes them again.
    assert_eq!(
        app.store
            .forget_other_models("topics")
            .await
            .expect("forgot"),
        0
    );
    assert_eq!(
        app.store
            .forget_other_models("other")
            .await
            .expect("forgot"),
        1
    );
    assert_eq!(app.store.unembedded(10).await.expect("listed").len(), 4);
    // A retired entry is never embedded.
    app.sql("UPDATE wiki_entries SET status = 'retired' WHERE title = 'Post timing'")
        .await;
    let waiting = app.store.unembedded(10).await.expect("listed");
    assert!(
        waiting.iter().all(|e| e.title != "Post timing"),
        "{waiting:?}"
    );
    assert_eq!(waiting.len(), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_instance_without_a_model_takes_no_embedding_job() {
    let app = spawn_app_with(AppOptions::default()).await;
    four_entries(&app).await;
    let with = Worker::new(app.store.clone()).embedder(Some(model()));
    let without = Worker::new(app.store.clone());
    without
        .schedule_embedding()
        .await
        .expect("nothing to enqueue");
    with.schedule_embedding().await.expect("enqueued");
    let jobs = |status: &'static str| {
        format!("SELECT count(*) AS n FROM jobs WHERE kind = '{EMBED_JOB}' AND status = '{status}'")
    };
    assert_eq!(
        app.count(&jobs("queued")).await,
        1,
        "one job, enqueued by the instance with a model"
    );
    assert_eq!(
        without.run_due().await.expect("ran"),
        0,
        "left to an instance with a model"
    );
    assert_eq!(app.count(&jobs("queued")).await, 1);
    assert_eq!(with.run_due().await.expect("ran"), 1);
    assert_eq!(app.count(&jobs("done")).await, 1);
    assert!(app.store.unembedded(10).await.expect("listed").is_empty());
}
