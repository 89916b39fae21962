//! The community use cases, answered in one order: the body's shape and limits, texts of only
//! white space included (400, when the API parses it); then the space (404: unknown, archived
//! or another workspace's); then the content rules only the domain knows (400: personal data in
//! summaries and tag values); then the space's rules (422: channel, day, one digest a day).
//! The writes run the last three inside the port's transaction. The space comes before the
//! content rules so that a body valid by its schema naming a space the caller cannot reach is
//! 404 whatever it holds (a schema cannot say "no phone numbers").

use crate::CommunityRefusal;
use crate::digest::DigestReport;
use crate::ports::{
    CommunityRepo, DigestOutcome, ProductHit, TicketMoved, TicketOutcome, TicketQuery,
    TicketRecord, TicketScope, WikiHit, WikiQuery,
};
use crate::space::{Channel, Space};
use crate::ticket::{NewTicket, TicketMove};
use fleetdesk_kernel::{AgentRef, Page};
use fleetdesk_wiki::meaning::{self, Embedder};
use fleetdesk_wiki::query;
use fleetdesk_wiki::service::query_vector;
use jiff::Timestamp;
use std::sync::Arc;

pub const WIKI_LIMIT_DEFAULT: i64 = 5;
pub const WIKI_LIMIT_MAX: i64 = 20;
pub const PRODUCTS_LIMIT_DEFAULT: i64 = 3;
pub const PRODUCTS_LIMIT_MAX: i64 = 10;
pub const QUERY_MAX: usize = 200;

type Outcome<T> = anyhow::Result<Result<T, CommunityRefusal>>;

#[derive(Clone)]
pub struct CommunityService {
    repo: Arc<dyn CommunityRepo>,
    /// The embedding model the wiki search reorders by, as the knowledge base's own search
    /// does; none: words alone.
    embedder: Option<Arc<dyn Embedder>>,
}

/// The query, trimmed, within [`QUERY_MAX`] characters.
fn checked_query(query: Option<&str>) -> Result<&str, CommunityRefusal> {
    let query = query.map(str::trim).unwrap_or_default();
    if query.chars().count() > QUERY_MAX {
        return Err(CommunityRefusal::invalid(
            "query",
            format!("must have at most {QUERY_MAX} characters"),
        ));
    }
    Ok(query)
}

fn limit(raw: Option<i64>, default: i64, max: i64) -> Result<i64, CommunityRefusal> {
    match raw {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(_) => Err(CommunityRefusal::invalid(
            "limit",
            format!("must be between 1 and {max}"),
        )),
    }
}

impl CommunityService {
    pub fn new(repo: Arc<dyn CommunityRepo>) -> Self {
        CommunityService {
            repo,
            embedder: None,
        }
    }

    /// The wiki search reorders what the words found by `embedder`'s vectors
    /// (`fleetdesk_wiki::meaning::fuse`).
    pub fn with_embedder(mut self, embedder: Option<Arc<dyn Embedder>>) -> Self {
        self.embedder = embedder;
        self
    }

    /// The active space registered under `channel` and `external_id` in the agent's
    /// workspace.
    pub async fn space(
        &self,
        agent: AgentRef,
        channel: Channel,
        external_id: &str,
    ) -> Outcome<Space> {
        let external_id = external_id.trim();
        if external_id.is_empty() {
            return Ok(Err(CommunityRefusal::invalid(
                "external_id",
                "must be 1-200 characters long and not only spaces",
            )));
        }
        let found = self.repo.find_space(agent, channel, external_id).await?;
        Ok(found.ok_or(CommunityRefusal::SpaceNotFound))
    }

    /// Entries for the space, best match first; a query without search terms (empty, or
    /// only stop words and punctuation) lists the most recently updated ones.
    pub async fn wiki(
        &self,
        agent: AgentRef,
        space_id: uuid::Uuid,
        query: Option<&str>,
        limit_raw: Option<i64>,
    ) -> Outcome<Vec<WikiHit>> {
        let (query, limit) = match (
            checked_query(query),
            limit(limit_raw, WIKI_LIMIT_DEFAULT, WIKI_LIMIT_MAX),
        ) {
            (Ok(q), Ok(l)) => (q, l),
            (Err(e), _) | (_, Err(e)) => return Ok(Err(e)),
        };
        // The knowledge base's own pipeline: words, their English, wording and synonyms, and
        // the model's reordering of the best by words.
        let mut words = query::words(query);
        let model = self.embedder.as_ref().filter(|_| !words.is_empty());
        let by_words = async {
            let plan = if words.is_empty() {
                None
            } else {
                let (terms, asked) = query::asking(&words);
                let facts = self.repo.wiki_facts(agent, &terms, &asked).await?;
                Some(query::plan_by(&mut words, &facts))
            };
            let q = WikiQuery {
                plan,
                limit: meaning::asked(limit, model.is_some()),
                model: model.map(|m| m.model().to_owned()),
            };
            self.repo.search_wiki(agent, space_id, &q).await
        };
        let (hits, asked) = futures_util::future::join(by_words, query_vector(model, query)).await;
        let hits = match hits? {
            Ok(h) => h,
            Err(e) => return Ok(Err(e)),
        };
        let page = meaning::page(hits, asked.as_ref(), |h| h.embedding.as_ref(), limit);
        Ok(Ok(page.into_iter().map(|(h, _)| h).collect()))
    }

    /// Products on sale, best match first (a query without terms: all, by name).
    pub async fn products(
        &self,
        agent: AgentRef,
        space_id: uuid::Uuid,
        query: Option<&str>,
        limit_raw: Option<i64>,
    ) -> Outcome<Vec<ProductHit>> {
        let (ts_query, limit) = match (
            checked_query(query),
            limit(limit_raw, PRODUCTS_LIMIT_DEFAULT, PRODUCTS_LIMIT_MAX),
        ) {
            (Ok(q), Ok(l)) => (fleetdesk_wiki::search::ts_query(q), l),
            (Err(e), _) | (_, Err(e)) => return Ok(Err(e)),
        };
        self.repo
            .search_products(agent, space_id, ts_query.as_deref(), limit)
            .await
    }

    pub async fn report_digest(
        &self,
        agent: AgentRef,
        report: DigestReport,
        now: Timestamp,
    ) -> Outcome<DigestOutcome> {
        self.repo.report_digest(agent, &report, now).await
    }

    pub async fn open_ticket(
        &self,
        agent: AgentRef,
        ticket: NewTicket,
        now: Timestamp,
    ) -> Outcome<TicketOutcome> {
        self.repo.open_ticket(agent, &ticket, now).await
    }

    /// A page of the scope's tickets, newest first.
    pub async fn tickets(
        &self,
        scope: TicketScope,
        query: &TicketQuery,
    ) -> anyhow::Result<Page<TicketRecord>> {
        self.repo.tickets(scope, query).await
    }

    /// One ticket of the scope, with every note.
    pub async fn ticket(&self, scope: TicketScope, id: uuid::Uuid) -> Outcome<TicketRecord> {
        Ok(self
            .repo
            .ticket(scope, id)
            .await?
            .ok_or(CommunityRefusal::TicketNotFound))
    }

    /// A person's move on a ticket of their organization.
    pub async fn move_ticket(
        &self,
        organization: Option<uuid::Uuid>,
        id: uuid::Uuid,
        mv: TicketMove,
        note: &str,
        by: serde_json::Value,
        now: Timestamp,
    ) -> Outcome<TicketMoved> {
        self.repo
            .move_ticket(organization, id, mv, note, by, now)
            .await
    }
}
