//! The decision use cases.

use crate::ports::{
    DecisionRecord, DecisionScope, DecisionsRepo, DoneReport, ListQuery, MoveRequest, Moved,
};
use crate::rules::DecisionRefusal;
use fleetdesk_kernel::{AgentRef, Page};
use std::sync::Arc;
use uuid::Uuid;

#[derive(Clone)]
pub struct DecisionsService {
    repo: Arc<dyn DecisionsRepo>,
}

impl DecisionsService {
    pub fn new(repo: Arc<dyn DecisionsRepo>) -> Self {
        DecisionsService { repo }
    }
}

/// The use cases that are one transaction of the port as they stand: it loads the facts the
/// rules of this crate decide on and writes their plan.
impl DecisionsService {
    /// An organization's decisions (`None`: every organization, for a platform admin outside
    /// any), newest first.
    pub async fn list(
        &self,
        organization: Option<Uuid>,
        query: &ListQuery,
    ) -> anyhow::Result<Page<DecisionRecord>> {
        self.repo.list(organization, query).await
    }
    /// Locks the decision, plans the move and applies it with its effect.
    pub async fn decide(
        &self,
        scope: DecisionScope,
        request: &MoveRequest,
    ) -> anyhow::Result<Result<Moved, DecisionRefusal>> {
        self.repo.decide(scope, request).await
    }
    /// An agent reports one of its follow-ups done.
    pub async fn complete(
        &self,
        agent: AgentRef,
        report: &DoneReport,
    ) -> anyhow::Result<Result<Moved, DecisionRefusal>> {
        self.repo.complete(agent, report).await
    }
}
