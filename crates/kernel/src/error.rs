use serde::{Deserialize, Serialize};

crate::text_enum! {
    /// The error codes of the specification's Errors table, plus `method_not_allowed` (405),
    /// `range_not_satisfiable` (416, a media link's Range past the end) and `unavailable` for a
    /// database that cannot be reached (503).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum ErrorCode {
        InvalidRequest => "invalid_request",
        Unauthorized => "unauthorized",
        Forbidden => "forbidden",
        NotFound => "not_found",
        MethodNotAllowed => "method_not_allowed",
        RequestTimeout => "request_timeout",
        AmbiguousCode => "ambiguous_code",
        IdempotencyInProgress => "idempotency_in_progress",
        AlreadyCovered => "already_covered",
        PayloadTooLarge => "payload_too_large",
        UnsupportedMediaType => "unsupported_media_type",
        RangeNotSatisfiable => "range_not_satisfiable",
        Rejected => "rejected",
        IdempotencyMismatch => "idempotency_mismatch",
        RateLimited => "rate_limited",
        Internal => "internal",
        Unavailable => "unavailable",
    }
}

impl ErrorCode {
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidRequest => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::AmbiguousCode
            | ErrorCode::IdempotencyInProgress
            | ErrorCode::AlreadyCovered => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::RangeNotSatisfiable => 416,
            ErrorCode::Rejected | ErrorCode::IdempotencyMismatch => 422,
            ErrorCode::RateLimited => 429,
            ErrorCode::Internal => 500,
            ErrorCode::Unavailable => 503,
        }
    }
}

/// A backing service (the database) cannot be reached right now: answered 503, not 500.
/// Adapters wrap such failures in it so the application layer can tell them from bugs.
#[derive(Debug, thiserror::Error)]
#[error("unavailable: {0}")]
pub struct Unavailable(pub String);

/// A write the database refused by a constraint the service's own checks did not see coming:
/// another request changed the same rows in between. Adapters turn such database errors into
/// it; it is answered 422 `rejected` with this message, never 500.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// A unique constraint: what the request writes exists already.
    #[error(
        "the request conflicts with what another request stored meanwhile; read again and retry"
    )]
    Exists,
    /// A foreign key: something the request names was removed meanwhile.
    #[error("the request names something that was removed meanwhile; read again and retry")]
    Gone,
}
