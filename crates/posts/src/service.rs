//! The post lifecycle's use cases: review lists and moves, the approved list, report
//! batches and metrics. Each is one transaction of the [`LifecycleRepo`], which loads the
//! facts the planners of [`crate::review`], [`crate::report`] and [`crate::metrics`] decide
//! on and writes their plans.

use crate::ports::*;
use crate::report::ItemError;
use fleetdesk_kernel::{AgentRef, Page};
use jiff::Timestamp;
use std::sync::Arc;
use uuid::Uuid;

#[derive(Clone)]
pub struct PostsService {
    repo: Arc<dyn LifecycleRepo>,
}

impl PostsService {
    pub fn new(repo: Arc<dyn LifecycleRepo>) -> Self {
        PostsService { repo }
    }

    /// A page of the review queue the viewer sees.
    pub async fn review_queue(
        &self,
        viewer: Viewer,
        query: &ReviewQuery,
    ) -> anyhow::Result<Page<PostCard>> {
        self.repo.review_queue(viewer, query).await
    }
    /// One post as the viewer may see it.
    pub async fn post(&self, viewer: Viewer, id: Uuid) -> anyhow::Result<Option<PostDetail>> {
        self.repo.post(viewer, id).await
    }
    /// A page of published posts the viewer sees.
    pub async fn published(
        &self,
        viewer: Viewer,
        query: &PublishedQuery,
    ) -> anyhow::Result<Page<PostCard>> {
        self.repo.published(viewer, query).await
    }
    /// Applies a review move in one transaction, with its review-record entry.
    pub async fn transition(
        &self,
        scope: ReviewScope,
        reviewer: &Reviewer,
        request: &TransitionRequest,
        now: Timestamp,
    ) -> anyhow::Result<Result<Transitioned, TransitionRefusal>> {
        self.repo.transition(scope, reviewer, request, now).await
    }
    /// Approved posts of the agent's accounts not yet scheduled, earliest planned first.
    pub async fn approved(&self, agent: AgentRef, limit: i64) -> anyhow::Result<Vec<PostCard>> {
        self.repo.approved(agent, limit).await
    }
    /// Plans and writes a report batch in one transaction; writes nothing when every item is
    /// refused.
    pub async fn report(
        &self,
        agent: AgentRef,
        items: Vec<Result<RawReportItem, ItemError>>,
        now: Timestamp,
    ) -> anyhow::Result<ReportOutcome> {
        self.repo.report(agent, items, now).await
    }
    /// Plans and writes a metrics batch in one transaction.
    pub async fn report_metrics(
        &self,
        agent: AgentRef,
        report: &MetricsReport,
        now: Timestamp,
    ) -> anyhow::Result<Result<MetricsOutcome, MetricsRefusal>> {
        self.repo.report_metrics(agent, report, now).await
    }
    /// When the agent last reported posts.
    pub async fn last_report_at(&self, agent: AgentRef) -> anyhow::Result<Option<Timestamp>> {
        self.repo.last_report_at(agent).await
    }
}
