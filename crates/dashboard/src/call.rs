//! Reads as Personal API operations, run through the pipeline for the session's person: a
//! page names the operation by its handle and gets the handler's typed answer
//! ([`Dashboard::call`]). Forms are [`crate::act`].

use crate::Dashboard;
use crate::session::Session;
use actix_web::HttpRequest;
use fleetdesk_api::input::Req;
use fleetdesk_api::op::{Api, HandleOp, Operation};
use fleetdesk_api::{ApiError, ErasedOp, pipeline};
use fleetdesk_tenancy::Caller;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// The Personal API's operations bound to their handles, by handle: the dashboard finds an
/// operation by its type, never by its path.
pub(crate) struct PersonalOps {
    by_handle: HashMap<TypeId, Arc<dyn ErasedOp>>,
}

impl PersonalOps {
    pub fn new(ops: &[Arc<dyn ErasedOp>]) -> PersonalOps {
        PersonalOps {
            by_handle: ops
                .iter()
                .filter(|op| op.spec().api == Api::Personal)
                .map(|op| (Any::type_id(op.as_any()), op.clone()))
                .collect(),
        }
    }

    /// The operation bound to the handle `H` (500 when the catalogue has none).
    pub fn get<H: Operation>(&self) -> Result<&Arc<dyn ErasedOp>, ApiError> {
        self.by_handle
            .get(&TypeId::of::<HandleOp<H>>())
            .ok_or_else(|| ApiError::internal(anyhow::anyhow!("no operation {}", H::SPEC.id())))
    }
}

/// The address links in answers are made on: the one the browser used.
pub(crate) fn base(req: &HttpRequest, dash: &Dashboard) -> String {
    crate::request_origin(req, &dash.ctx.config)
}

impl Dashboard {
    /// Runs the Personal API read `H` for the session's person with typed input: its typed
    /// answer.
    pub(crate) async fn call<H: Operation>(
        &self,
        req: &HttpRequest,
        session: &Session,
        input: Req<H::Path, H::Query, H::Body>,
    ) -> Result<H::Output, ApiError> {
        let op = self.ops.get::<H>()?;
        let caller = Caller::Member(session.member.clone());
        pipeline::call::<H>(&self.ctx, op.as_ref(), caller, input, Some(base(req, self))).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_personal_operation_is_found_by_its_handle() {
        let ops = PersonalOps::new(&fleetdesk_api::catalogue());
        let found = ops
            .get::<fleetdesk_posts::wire::personal::ReviewPost>()
            .expect("bound");
        assert_eq!(found.spec().path, "/posts/{id}/transition");
        let found = ops
            .get::<fleetdesk_api::ops::today::GetToday>()
            .expect("bound");
        assert_eq!(found.spec().path, "/today");
        assert!(
            ops.get::<fleetdesk_api::ops::accounts::GetWorkToday>()
                .is_err(),
            "an agent operation is not the dashboard's"
        );
    }
}
