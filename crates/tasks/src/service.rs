//! The task card use cases.

use crate::ports::TasksRepo;
use std::sync::Arc;

#[derive(Clone)]
pub struct TasksService {
    repo: Arc<dyn TasksRepo>,
}

impl TasksService {
    pub fn new(repo: Arc<dyn TasksRepo>) -> Self {
        TasksService { repo }
    }

    /// The port's own one-transaction use cases.
    pub fn repo(&self) -> &dyn TasksRepo {
        &*self.repo
    }
}
