//! The interface's field types (with the `wire` feature): the request and response pieces
//! that carry their rule and their schema, shared by the server that parses them, the
//! description that states them and a client that sends them.

pub mod fields;
pub mod relay;
pub mod strings;

use crate::op::Nothing;
use std::borrow::Cow;
use utoipa::openapi::{RefOr, Schema};

impl validator::Validate for Nothing {
    fn validate(&self) -> Result<(), validator::ValidationErrors> {
        Ok(())
    }
}

impl utoipa::PartialSchema for Nothing {
    fn schema() -> RefOr<Schema> {
        utoipa::openapi::ObjectBuilder::new().build().into()
    }
}

impl utoipa::ToSchema for Nothing {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Nothing")
    }
}

/// A list operation read page by page: where a page's items and the next page's cursor are in
/// its answer, and how its query asks for the page after a cursor.
pub trait Paged: crate::op::Operation {
    type Item;
    /// The page's items, and the cursor of the next page (none on the last).
    fn page(out: Self::Output) -> (Vec<Self::Item>, Option<fields::Cursor>);
    /// Makes `query` ask for the page after `cursor`.
    fn after(query: &mut Self::Query, cursor: fields::Cursor);
}
