//! The decision use cases.

use crate::ports::DecisionsRepo;
use std::sync::Arc;

#[derive(Clone)]
pub struct DecisionsService {
    repo: Arc<dyn DecisionsRepo>,
}

impl DecisionsService {
    pub fn new(repo: Arc<dyn DecisionsRepo>) -> Self {
        DecisionsService { repo }
    }

    /// The port's own one-transaction use cases.
    pub fn repo(&self) -> &dyn DecisionsRepo {
        &*self.repo
    }
}
