//! How a failed account lookup is answered, and the input and output pieces several operations
//! share (the kernel's: `fleetdesk_kernel::wire`).

pub use fleetdesk_kernel::checked_string;
pub use fleetdesk_kernel::wire::fields::{AgentBrief, CodePath, MoveResult, PlatformQuery};
pub use fleetdesk_kernel::wire::strings::*;

use crate::error::ApiError;
use fleetdesk_accounts::ports::LookupError;

/// The error of a `code` that names none of the caller's accounts.
pub fn lookup_error(e: LookupError, code: &str) -> ApiError {
    match e {
        LookupError::NotFound => {
            ApiError::not_found(format!("no account {code} in this workspace"))
        }
        LookupError::Ambiguous => ApiError::new(
            fleetdesk_kernel::ErrorCode::AmbiguousCode,
            format!("{code} names accounts on several platforms; add the platform parameter"),
        )
        .with_field("platform"),
        LookupError::NotYours => {
            ApiError::forbidden(format!("account {code} belongs to another agent's persona"))
        }
    }
}

/// A domain error that may be a failed account lookup, answered naming the code the caller
/// gave (its `From` answers any other way it fails).
pub trait MaybeLookup: Into<ApiError> {
    fn lookup(&self) -> Option<LookupError>;
}

/// Implements [`MaybeLookup`] for a domain error: the pattern of its lookup failure, binding
/// the `LookupError`.
macro_rules! maybe_lookup {
    ($ty:ty, $pat:pat => $l:ident) => {
        impl $crate::ops::common::MaybeLookup for $ty {
            fn lookup(&self) -> Option<fleetdesk_accounts::ports::LookupError> {
                match self {
                    $pat => Some(*$l),
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use maybe_lookup;

impl From<LookupError> for ApiError {
    fn from(e: LookupError) -> ApiError {
        lookup_error(e, "this code")
    }
}

impl MaybeLookup for LookupError {
    fn lookup(&self) -> Option<LookupError> {
        Some(*self)
    }
}

/// Turns a domain error into its answer, naming `code` when the account lookup failed.
pub fn naming<E: MaybeLookup>(code: &str) -> impl FnOnce(E) -> ApiError + '_ {
    move |e| match e.lookup() {
        Some(l) => lookup_error(l, code),
        None => e.into(),
    }
}

/// An ad pick number: `SP-<n>` (any letter case) or the bare `<n>`.
pub use fleetdesk_ads::wire::PickInput;
