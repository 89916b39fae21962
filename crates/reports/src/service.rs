//! The reports' and metrics' use cases: each is one transaction of its port.

use crate::metrics::{MetricsData, MetricsQuery, MetricsRefusal, MetricsRepo};
use crate::ports::*;
use fleetdesk_kernel::{Page, Position};
use std::sync::Arc;
use uuid::Uuid;

/// Reports people write and issue.
#[derive(Clone)]
pub struct ReportsService {
    repo: Arc<dyn ReportsRepo>,
}

impl ReportsService {
    pub fn new(repo: Arc<dyn ReportsRepo>) -> Self {
        ReportsService { repo }
    }
    /// The reports `viewer` sees, newest first (by creation), after `after`.
    pub async fn list(
        &self,
        viewer: Viewer,
        after: Option<Position>,
        limit: i64,
    ) -> anyhow::Result<Page<ReportSummary>> {
        self.repo.list(viewer, after, limit).await
    }
    /// Report `id` when `viewer` sees it.
    pub async fn get(&self, viewer: Viewer, id: Uuid) -> anyhow::Result<Option<ReportRecord>> {
        self.repo.get(viewer, id).await
    }
    /// Builds a report now from what was reported, in a workspace of `viewer`'s organization.
    pub async fn create(
        &self,
        viewer: Viewer,
        request: &NewReport,
    ) -> anyhow::Result<Result<ReportRecord, CreateRefusal>> {
        self.repo.create(viewer, request).await
    }
    /// Issues report `id` to the clients (`None`: `viewer` does not see it).
    pub async fn issue(
        &self,
        viewer: Viewer,
        id: Uuid,
        by: &str,
    ) -> anyhow::Result<Option<Issued>> {
        self.repo.issue(viewer, id, by).await
    }
}

/// The metrics people read.
#[derive(Clone)]
pub struct MetricsService {
    repo: Arc<dyn MetricsRepo>,
}

impl MetricsService {
    pub fn new(repo: Arc<dyn MetricsRepo>) -> Self {
        MetricsService { repo }
    }

    pub async fn load(
        &self,
        query: &MetricsQuery,
    ) -> anyhow::Result<Result<MetricsData, MetricsRefusal>> {
        self.repo.load(query).await
    }
}
