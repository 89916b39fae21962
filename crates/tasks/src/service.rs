//! The task card use cases: each is one transaction of the [`TasksRepo`], which loads the facts
//! of [`crate::plan`] and writes its plan.

use crate::ports::{
    Actor, ListQuery, MoveRequest, Moved, OpenRequest, Opened, Opener, TaskRecord, TaskScope,
    TasksRepo,
};
use crate::rules::TaskRefusal;
use fleetdesk_kernel::{AgentRef, Page};
use std::sync::Arc;

#[derive(Clone)]
pub struct TasksService {
    repo: Arc<dyn TasksRepo>,
}

impl TasksService {
    pub fn new(repo: Arc<dyn TasksRepo>) -> Self {
        TasksService { repo }
    }

    /// One card of the scope, with all its notes.
    pub async fn get(
        &self,
        scope: TaskScope,
        id: uuid::Uuid,
    ) -> anyhow::Result<Option<TaskRecord>> {
        self.repo.get(scope, id).await
    }

    /// A page of the scope's cards, newest first.
    pub async fn list(
        &self,
        scope: TaskScope,
        query: &ListQuery,
    ) -> anyhow::Result<Page<TaskRecord>> {
        self.repo.list(scope, query).await
    }

    /// Opens a card, or joins the open card of the same kind on the same target.
    pub async fn open(
        &self,
        opener: &Opener,
        request: &OpenRequest,
    ) -> anyhow::Result<Result<Opened, TaskRefusal>> {
        self.repo.open(opener, request).await
    }

    /// A move on a card, with a follow-up's decision.
    pub async fn act(
        &self,
        actor: &Actor,
        request: &MoveRequest,
    ) -> anyhow::Result<Result<Moved, TaskRefusal>> {
        self.repo.act(actor, request).await
    }

    /// The agent's open cards (at most `limit`), oldest first.
    pub async fn open_cards(&self, agent: AgentRef, limit: i64) -> anyhow::Result<Vec<TaskRecord>> {
        self.repo.open_cards(agent, limit).await
    }
}
