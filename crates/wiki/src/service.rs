//! The knowledge-base use cases: search turns the query into terms here and cuts each hit's
//! snippet here; storage ranks. The other use cases are the port's own transactions.

use crate::entry::{EntryStatus, Proposal, WikiRefusal};
use crate::ports::{
    Entry, EntryHead, EntryRef, IndexQuery, Proposed, SearchQuery, WikiRepo, WikiScope,
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
}

impl WikiService {
    pub fn new(repo: Arc<dyn WikiRepo>) -> Self {
        WikiService { repo }
    }

    /// Entries the agent sees in the statuses search finds ([`EntryStatus::SEARCHED`]: canon
    /// only, a rule storage applies before its limit) that have a word of `q` (or its English,
    /// other wording or synonym), best first by the [`query`] plan, at most `limit`. A query
    /// without any word (only punctuation or stop words) finds nothing.
    pub async fn search(
        &self,
        scope: WikiScope,
        q: &str,
        project: Option<String>,
        limit: i64,
    ) -> anyhow::Result<Result<Vec<Hit>, WikiRefusal>> {
        let mut words = query::words(q);
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
            limit,
        };
        let found = match self.repo.search(scope, &query).await? {
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
        Ok(Ok(found
            .into_iter()
            .map(|f| Hit {
                snippet: search::snippet(&f.body, &terms),
                score: f.score,
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
    use crate::ports::{Entry, EntryRef, Found, IndexQuery, Proposed, SearchFacts};
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
