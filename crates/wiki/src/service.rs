//! The knowledge-base use cases: search turns the query into terms here, reorders what storage
//! ranked by words with the embedding model when there is one ([`crate::meaning`]) and cuts
//! each hit's snippet here. The other use cases are the port's own transactions.

use crate::entry::{EntryStatus, Proposal, WikiRefusal};
use crate::meaning::{self, Embedder, Embedding};
use crate::ports::{
    EmbeddingsRepo, Entry, EntryHead, EntryRef, IndexQuery, Proposed, SearchQuery, WikiRepo,
    WikiScope,
};
use crate::query;
use crate::search;
use crate::sources::{Recorded, SourceRow, SyncRefusal, SyncReport, WikiSourcesRepo};
use fleetdesk_kernel::{AgentRef, Page};
use jiff::Timestamp;
use std::sync::Arc;
use uuid::Uuid;

/// A search result: the entry's head, its relevance (higher is better), up to
/// [`search::SNIPPET_MAX`] characters of its body around the best hit, and the words of the
/// query it has (as the query wrote them; found as written, in English, in the other wording
/// or through a synonym).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub head: EntryHead,
    pub score: f32,
    pub snippet: String,
    pub matched: Vec<String>,
}

#[derive(Clone)]
pub struct WikiService {
    repo: Arc<dyn WikiRepo>,
    /// The embedding model search reorders by; none: words alone.
    embedder: Option<Arc<dyn Embedder>>,
}

impl WikiService {
    pub fn new(repo: Arc<dyn WikiRepo>) -> Self {
        WikiService {
            repo,
            embedder: None,
        }
    }

    /// Search reorders what the words found by `embedder`'s vectors ([`meaning::fuse`]).
    pub fn with_embedder(mut self, embedder: Option<Arc<dyn Embedder>>) -> Self {
        self.embedder = embedder;
        self
    }

    /// Entries the agent sees in the statuses search finds ([`EntryStatus::SEARCHED`]: canon
    /// only, a rule storage applies before its limit) that have a word of `q` (or its English,
    /// other wording or synonym), best first by the [`query`] plan, at most `limit`; with an
    /// embedding model, the best [`meaning::POOL`] by words reordered by words and meaning
    /// ([`meaning::fuse`]; the query is embedded while storage ranks, and a model that fails
    /// leaves the words' order). A query without any word (only punctuation or stop words)
    /// finds nothing.
    pub async fn search(
        &self,
        scope: WikiScope,
        q: &str,
        project: Option<String>,
        limit: i64,
    ) -> anyhow::Result<Result<Vec<Hit>, WikiRefusal>> {
        let mut words = query::words(q);
        let model = self.embedder.as_ref().filter(|_| !words.is_empty());
        let by_words = async {
            let plan = if words.is_empty() {
                None
            } else {
                let (terms, queries) = query::asking(&words);
                let facts = self
                    .repo
                    .search_facts(scope, &terms, &queries, EntryStatus::SEARCHED)
                    .await?;
                Some(query::plan_by(&mut words, &facts))
            };
            let query = SearchQuery {
                plan,
                statuses: EntryStatus::SEARCHED,
                project,
                limit: meaning::asked(limit, model.is_some()),
                model: model.map(|m| m.model().to_owned()),
            };
            self.repo.search(scope, &query).await
        };
        let (found, asked) = futures_util::future::join(by_words, query_vector(model, q)).await;
        let found = match found? {
            Ok(f) => f,
            Err(r) => return Ok(Err(r)),
        };
        debug_assert!(
            found
                .iter()
                .all(|f| EntryStatus::SEARCHED.contains(&f.head.status)),
            "storage answers only the statuses searched"
        );
        let terms = query::all_terms(&words);
        let page = meaning::page(found, asked.as_ref(), |f| f.embedding.as_ref(), limit);
        Ok(Ok(page
            .into_iter()
            .map(|(f, fused)| Hit {
                snippet: search::snippet(&f.body, &terms),
                score: fused.map_or(f.score, |s| s as f32),
                matched: f
                    .matched
                    .iter()
                    .filter_map(|&i| words.get(usize::try_from(i).ok()?.checked_sub(1)?))
                    .map(|w| w.shown.clone())
                    .collect(),
                head: f.head,
            })
            .collect()))
    }
}

/// The vector of the query `q` by `model`; none without a model, or when it failed (logged:
/// search goes on by words).
pub async fn query_vector(model: Option<&Arc<dyn Embedder>>, q: &str) -> Option<Embedding> {
    let model = model?;
    match model.query(q.trim()).await {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(
                error = %e,
                model = model.model(),
                "search ranks by words alone: the embedding model failed"
            );
            None
        }
    }
}

/// Makes the vectors of the entries that have none of their version, [`meaning::BATCH`] at a
/// time, while `more()` says to go on; how many it stored. Run by one instance at a time (a job
/// of the queue): an entry changed meanwhile keeps no vector of an older version.
pub async fn embed_pending(
    repo: &dyn EmbeddingsRepo,
    embedder: &dyn Embedder,
    mut more: impl FnMut() -> bool,
) -> anyhow::Result<u64> {
    let mut stored = 0;
    while more() {
        let batch = repo.unembedded(meaning::BATCH as i64).await?;
        if batch.is_empty() {
            break;
        }
        let texts: Vec<String> = batch
            .iter()
            .map(|e| meaning::passage(&e.title, &e.summary, &e.tags, &e.body))
            .collect();
        let vectors = embedder.passages(&texts).await?;
        anyhow::ensure!(
            vectors.len() == texts.len(),
            "the embedding model answered {} vectors for {} passages",
            vectors.len(),
            texts.len()
        );
        let made: Vec<(Uuid, i32, Embedding)> = batch
            .iter()
            .zip(vectors)
            .map(|(e, v)| (e.id, e.version, v))
            .collect();
        stored += repo.store_embeddings(embedder.model(), &made).await?;
        if batch.len() < meaning::BATCH {
            break;
        }
    }
    Ok(stored)
}

/// The use cases that are one transaction of the port as they stand: it loads the facts the
/// rules of this crate decide on and writes their plan.
impl WikiService {
    /// The scope of a workspace of `organization` (`None`: any, for a platform admin), not
    /// archived; `None` when there is no such workspace.
    pub async fn workspace_scope(
        &self,
        organization: Option<Uuid>,
        workspace: Uuid,
    ) -> anyhow::Result<Option<WikiScope>> {
        self.repo.workspace_scope(organization, workspace).await
    }
    /// A page of the entries of the scope, newest first.
    pub async fn index(
        &self,
        scope: WikiScope,
        query: &IndexQuery,
    ) -> anyhow::Result<Result<Page<EntryHead>, WikiRefusal>> {
        self.repo.index(scope, query).await
    }
    /// One entry of the scope, with its sources and versions.
    pub async fn get(
        &self,
        scope: WikiScope,
        entry: &EntryRef,
    ) -> anyhow::Result<Result<Entry, WikiRefusal>> {
        self.repo.get(scope, entry).await
    }
    /// Lands a proposal in one transaction: a new entry or a new version of one, canon or a
    /// draft with its `wiki_draft` decision, by the organization's review setting.
    pub async fn propose(
        &self,
        agent: AgentRef,
        proposal: &Proposal,
        now: Timestamp,
    ) -> anyhow::Result<Result<Proposed, WikiRefusal>> {
        self.repo.propose(agent, proposal, now).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{Category, Proposal};
    use crate::ports::{Entry, EntryRef, EntryText, Found, IndexQuery, Proposed, SearchFacts};
    use crate::query::Counts;
    use fleetdesk_kernel::{AgentRef, BoxFuture, Page};
    use std::sync::Mutex;
    use uuid::Uuid;

    /// Answers every search with `found`, its facts with `synonyms` and one entry in ten
    /// having each word, and records the queries it was asked.
    struct Fake {
        found: Vec<Found>,
        synonyms: Vec<String>,
        asked: Mutex<Vec<SearchQuery>>,
        asked_facts: Mutex<Vec<(Vec<String>, Vec<String>)>>,
    }

    impl Fake {
        fn new(found: Vec<Found>, synonyms: &[&str]) -> Arc<Fake> {
            Arc::new(Fake {
                found,
                synonyms: synonyms.iter().map(|s| s.to_string()).collect(),
                asked: Mutex::new(Vec::new()),
                asked_facts: Mutex::new(Vec::new()),
            })
        }
    }

    impl WikiRepo for Fake {
        fn index<'a>(
            &'a self,
            _: WikiScope,
            _: &'a IndexQuery,
        ) -> BoxFuture<'a, anyhow::Result<Result<Page<EntryHead>, WikiRefusal>>> {
            unimplemented!()
        }

        fn get<'a>(
            &'a self,
            _: WikiScope,
            _: &'a EntryRef,
        ) -> BoxFuture<'a, anyhow::Result<Result<Entry, WikiRefusal>>> {
            unimplemented!()
        }

        fn search<'a>(
            &'a self,
            _: WikiScope,
            query: &'a SearchQuery,
        ) -> BoxFuture<'a, anyhow::Result<Result<Vec<Found>, WikiRefusal>>> {
            self.asked.lock().unwrap().push(query.clone());
            let found = self.found.clone();
            Box::pin(async move { Ok(Ok(found)) })
        }

        fn search_facts<'a>(
            &'a self,
            _: WikiScope,
            terms: &'a [String],
            words: &'a [String],
            _: &'static [EntryStatus],
        ) -> BoxFuture<'a, anyhow::Result<SearchFacts>> {
            self.asked_facts
                .lock()
                .unwrap()
                .push((terms.to_vec(), words.to_vec()));
            let facts = SearchFacts {
                synonyms: self.synonyms.clone(),
                counts: Counts {
                    entries: 10,
                    having: vec![1; words.len()],
                },
            };
            Box::pin(async move { Ok(facts) })
        }

        fn workspace_scope(
            &self,
            _: Option<Uuid>,
            _: Uuid,
        ) -> BoxFuture<'_, anyhow::Result<Option<WikiScope>>> {
            unimplemented!()
        }

        fn propose<'a>(
            &'a self,
            _: AgentRef,
            _: &'a Proposal,
            _: Timestamp,
        ) -> BoxFuture<'a, anyhow::Result<Result<Proposed, WikiRefusal>>> {
            unimplemented!()
        }
    }

    /// Runs a future whose every await is ready (the fake's).
    fn ready<F: std::future::Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("the fake never waits"),
        }
    }

    fn found(title: &str, body: &str, status: EntryStatus, score: f32, matched: &[i32]) -> Found {
        let now = jiff::Timestamp::UNIX_EPOCH;
        Found {
            head: EntryHead {
                id: Uuid::new_v4(),
                title: title.to_owned(),
                category: Category::Lesson,
                summary: String::new(),
                tags: Vec::new(),
                version: 1,
                status,
                project: None,
                created_at: now,
                updated_at: now,
            },
            body: body.to_owned(),
            score,
            matched: matched.to_vec(),
            embedding: None,
        }
    }

    fn scope() -> WikiScope {
        WikiScope {
            workspace_id: Uuid::nil(),
            organization_id: Uuid::nil(),
        }
    }

    #[test]
    fn a_search_plans_by_storage_s_facts_and_cuts_each_snippet() {
        let body = format!("{}貓咪愛吃魚{}", "開頭".repeat(100), "結尾".repeat(100));
        let fake = Fake::new(
            vec![
                found("Cats", &body, EntryStatus::Canon, 0.5, &[1]),
                found("Kittens", "猫咪", EntryStatus::Canon, 0.4, &[1, 2]),
            ],
            &[],
        );
        let service = WikiService::new(fake.clone());
        let hits = ready(service.search(scope(), "貓咪 food", Some("beauty".into()), 8))
            .unwrap()
            .unwrap();
        assert_eq!(hits.len(), 2, "storage's answer, in its order");
        assert_eq!((hits[0].score, hits[1].score), (0.5, 0.4));
        assert!(hits[0].snippet.contains("貓咪"), "{}", hits[0].snippet);
        assert!(hits[0].snippet.chars().count() <= search::SNIPPET_MAX);
        // Matched words as the query wrote them.
        assert_eq!(hits[0].matched, ["貓咪"]);
        assert_eq!(hits[1].matched, ["貓咪", "food"]);
        let facts = fake.asked_facts.lock().unwrap().clone();
        assert_eq!(
            facts,
            vec![(
                vec![
                    "猫咪".to_owned(),
                    "cat".to_owned(),
                    "kitti".to_owned(),
                    "food".to_owned()
                ],
                vec!["'猫咪' | 'cat' | 'kitti'".to_owned(), "'food'".to_owned()]
            )]
        );
        let asked = fake.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        let plan = asked[0].plan.as_ref().expect("a plan");
        assert_eq!(plan.words, facts[0].1);
        assert_eq!(plan.every, "('猫咪' | 'cat' | 'kitti') & ('food')");
        assert_eq!(
            (
                asked[0].statuses,
                asked[0].project.as_deref(),
                asked[0].limit
            ),
            (&[EntryStatus::Canon][..], Some("beauty"), 8)
        );
    }

    #[test]
    fn storage_s_synonyms_join_the_plan() {
        let fake = Fake::new(Vec::new(), &["醇|视黄醇"]);
        let service = WikiService::new(fake.clone());
        ready(service.search(scope(), "A醇 晚上", None, 8))
            .unwrap()
            .unwrap();
        let plan = fake.asked.lock().unwrap()[0].plan.clone().unwrap();
        assert!(plan.words[0].contains("'视黄醇'"), "{plan:?}");
    }

    /// A model of two directions: a text about crises, or anything else; records the passages
    /// it was given. `fail`: every query fails.
    #[derive(Debug)]
    struct Model {
        fail: bool,
        passages: Mutex<Vec<String>>,
    }

    impl Model {
        fn new(fail: bool) -> Arc<Model> {
            Arc::new(Model {
                fail,
                passages: Mutex::new(Vec::new()),
            })
        }
        fn of(text: &str) -> Embedding {
            let crisis = ["angry", "crisis", "危機"].iter().any(|w| text.contains(w));
            Embedding::from_floats(if crisis { &[1.0, 0.0] } else { &[0.0, 1.0] }).unwrap()
        }
    }

    impl Embedder for Model {
        fn model(&self) -> &str {
            "two-directions"
        }
        fn query<'a>(&'a self, text: &'a str) -> BoxFuture<'a, anyhow::Result<Embedding>> {
            let fail = self.fail;
            Box::pin(async move {
                anyhow::ensure!(!fail, "the model is down");
                Ok(Model::of(text))
            })
        }
        fn passages<'a>(
            &'a self,
            texts: &'a [String],
        ) -> BoxFuture<'a, anyhow::Result<Vec<Embedding>>> {
            self.passages.lock().unwrap().extend(texts.iter().cloned());
            Box::pin(async move { Ok(texts.iter().map(|t| Model::of(t)).collect()) })
        }
    }

    /// Five entries found by words, each with its vector as the model makes it of its title;
    /// the fourth is about crises.
    fn pool() -> Vec<Found> {
        ["Comments", "Reach", "Posting", "危機處理", "Hooks"]
            .iter()
            .enumerate()
            .map(|(i, t)| Found {
                embedding: Some(Model::of(t)),
                ..found(t, "", EntryStatus::Canon, 1.0 - i as f32 / 10.0, &[1])
            })
            .collect()
    }

    #[test]
    fn with_a_model_search_reorders_the_pool_by_meaning_and_keeps_the_page() {
        let fake = Fake::new(pool(), &[]);
        let service = WikiService::new(fake.clone()).with_embedder(Some(Model::new(false)));
        let hits = ready(service.search(scope(), "angry comments", None, 3))
            .unwrap()
            .unwrap();
        let titles: Vec<_> = hits.iter().map(|h| h.head.title.as_str()).collect();
        // Fourth by words, first by meaning: third (1/5 + 0.5/2 against 1/4 + 0.5/5).
        assert_eq!(titles, ["Comments", "Reach", "危機處理"]);
        assert_eq!(hits[0].score, (1.0 / 2.0 + 0.5 / 3.0) as f32);
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        let asked = fake.asked.lock().unwrap().clone();
        assert_eq!(
            (asked[0].limit, asked[0].model.as_deref()),
            (meaning::POOL, Some("two-directions")),
            "the pool, with the model's vectors"
        );
        // A page larger than the pool asks for the page.
        let _ = ready(service.search(scope(), "angry", None, 40));
        assert_eq!(fake.asked.lock().unwrap()[1].limit, 40);
    }

    #[test]
    fn a_failing_model_leaves_the_words_order() {
        let fake = Fake::new(pool(), &[]);
        let service = WikiService::new(fake.clone()).with_embedder(Some(Model::new(true)));
        let hits = ready(service.search(scope(), "angry comments", None, 3))
            .unwrap()
            .unwrap();
        let titles: Vec<_> = hits.iter().map(|h| h.head.title.as_str()).collect();
        assert_eq!(titles, ["Comments", "Reach", "Posting"]);
        assert_eq!(hits[0].score, 1.0, "the words' own score");
        // Without a model: the page is asked for, and no vectors.
        let words_only = WikiService::new(fake.clone());
        let _ = ready(words_only.search(scope(), "angry", None, 3));
        let asked = fake.asked.lock().unwrap()[1].clone();
        assert_eq!((asked.limit, asked.model), (3, None));
    }

    /// Entries without a vector, as storage lists them; what was stored.
    struct Unembedded {
        waiting: Mutex<Vec<EntryText>>,
        stored: Mutex<Vec<(String, Uuid, i32)>>,
    }

    impl EmbeddingsRepo for Unembedded {
        fn forget_other_models<'a>(&'a self, _: &'a str) -> BoxFuture<'a, anyhow::Result<u64>> {
            unimplemented!()
        }
        fn unembedded(&self, limit: i64) -> BoxFuture<'_, anyhow::Result<Vec<EntryText>>> {
            let waiting = self.waiting.lock().unwrap();
            let batch = waiting.iter().take(limit as usize).cloned().collect();
            Box::pin(async move { Ok(batch) })
        }
        fn store_embeddings<'a>(
            &'a self,
            model: &'a str,
            made: &'a [(Uuid, i32, Embedding)],
        ) -> BoxFuture<'a, anyhow::Result<u64>> {
            let mut waiting = self.waiting.lock().unwrap();
            waiting.retain(|e| !made.iter().any(|m| m.0 == e.id));
            let mut stored = self.stored.lock().unwrap();
            stored.extend(made.iter().map(|m| (model.to_owned(), m.0, m.1)));
            Box::pin(async move { Ok(made.len() as u64) })
        }
    }

    fn waiting(n: usize) -> Arc<Unembedded> {
        Arc::new(Unembedded {
            waiting: Mutex::new(
                (0..n)
                    .map(|i| EntryText {
                        id: Uuid::new_v4(),
                        version: 2,
                        title: format!("T{i}"),
                        summary: "S".into(),
                        tags: vec!["t".into()],
                        body: "B".into(),
                    })
                    .collect(),
            ),
            stored: Mutex::new(Vec::new()),
        })
    }

    #[test]
    fn the_job_embeds_every_waiting_entry_a_batch_at_a_time_while_asked() {
        let repo = waiting(meaning::BATCH * 2 + 1);
        let model = Model::new(false);
        let stored = ready(embed_pending(repo.as_ref(), model.as_ref(), || true)).unwrap();
        assert_eq!(stored, (meaning::BATCH * 2 + 1) as u64);
        assert!(repo.waiting.lock().unwrap().is_empty());
        let rows = repo.stored.lock().unwrap().clone();
        assert!(rows.iter().all(|r| r.0 == "two-directions" && r.2 == 2));
        assert_eq!(model.passages.lock().unwrap()[0], "T0\nS\nt\nB");

        // Asked to stop after one batch, it stops.
        let repo = waiting(meaning::BATCH * 2);
        let mut batches = 0;
        let stored = ready(embed_pending(repo.as_ref(), model.as_ref(), || {
            batches += 1;
            batches == 1
        }))
        .unwrap();
        assert_eq!(stored, meaning::BATCH as u64);
        assert_eq!(repo.waiting.lock().unwrap().len(), meaning::BATCH);
    }

    #[test]
    fn a_query_without_terms_asks_for_nothing_but_the_project() {
        let fake = Fake::new(Vec::new(), &[]);
        let service = WikiService::new(fake.clone());
        let hits = ready(service.search(scope(), " ... the 的 ", None, 8)).unwrap();
        assert_eq!(hits, Ok(Vec::new()));
        assert_eq!(fake.asked.lock().unwrap()[0].plan, None);
        assert!(fake.asked_facts.lock().unwrap().is_empty());
    }
}

/// Wiki sources and their sync runs: each use case is one transaction of the
/// [`WikiSourcesRepo`].
#[derive(Clone)]
pub struct WikiSourcesService {
    repo: Arc<dyn WikiSourcesRepo>,
}

impl WikiSourcesService {
    pub fn new(repo: Arc<dyn WikiSourcesRepo>) -> Self {
        WikiSourcesService { repo }
    }
    /// Every source of the agent's workspace.
    pub async fn workspace_sources(&self, agent: AgentRef) -> anyhow::Result<Vec<SourceRow>> {
        self.repo.workspace_sources(agent).await
    }
    /// Locks the source (of the agent's workspace, else NotFound), checks [`may_report`](crate::sources::may_report),
    /// records the run in wiki_sync_runs and sets the source's last_run_at (now), last_status
    /// and cursor (kept when the report has none). The report is already checked.
    pub async fn record_sync(
        &self,
        agent: AgentRef,
        source: Uuid,
        report: &SyncReport,
    ) -> anyhow::Result<Result<Recorded, SyncRefusal>> {
        self.repo.record_sync(agent, source, report).await
    }
}
