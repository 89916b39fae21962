//! The knowledge-base use cases: search turns the query into terms here and cuts each hit's
//! snippet here; storage ranks. The other use cases are the port's own transactions.

use crate::entry::{EntryStatus, WikiRefusal};
use crate::ports::{EntryHead, SearchQuery, WikiRepo};
use crate::search;
use fleetdesk_kernel::AgentRef;
use std::sync::Arc;

/// A search result: the entry's head, its relevance (higher is better) and up to
/// [`search::SNIPPET_MAX`] characters of its body around the best hit.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub head: EntryHead,
    pub score: f32,
    pub snippet: String,
}

#[derive(Clone)]
pub struct WikiService {
    repo: Arc<dyn WikiRepo>,
}

impl WikiService {
    pub fn new(repo: Arc<dyn WikiRepo>) -> Self {
        WikiService { repo }
    }

    /// The port's own one-transaction use cases.
    pub fn repo(&self) -> &dyn WikiRepo {
        &*self.repo
    }

    /// Canon entries the agent sees that share a term with `q`, best first, at most `limit`.
    /// A query without any term (only punctuation or stop words) finds nothing.
    pub async fn search(
        &self,
        agent: AgentRef,
        q: &str,
        project: Option<String>,
        limit: i64,
    ) -> anyhow::Result<Result<Vec<Hit>, WikiRefusal>> {
        let terms = search::query_terms(q);
        let query = SearchQuery {
            ts_query: search::ts_query(q),
            project,
            limit,
        };
        let found = match self.repo.search(agent, &query).await? {
            Ok(f) => f,
            Err(r) => return Ok(Err(r)),
        };
        Ok(Ok(found
            .into_iter()
            .filter(|f| f.head.status == EntryStatus::Canon)
            .map(|f| Hit {
                snippet: search::snippet(&f.body, &terms),
                score: f.score,
                head: f.head,
            })
            .collect()))
    }
}
