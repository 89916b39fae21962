use serde::{Deserialize, Serialize};

/// The error codes of the specification's Errors table, plus `method_not_allowed` (405),
/// `range_not_satisfiable` (416, a media link's Range past the end) and `unavailable` for a
/// database that cannot be reached (503).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    AmbiguousCode,
    IdempotencyInProgress,
    AlreadyCovered,
    PayloadTooLarge,
    RangeNotSatisfiable,
    Rejected,
    IdempotencyMismatch,
    RateLimited,
    Internal,
    Unavailable,
}

impl ErrorCode {
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidRequest => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::AmbiguousCode
            | ErrorCode::IdempotencyInProgress
            | ErrorCode::AlreadyCovered => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::RangeNotSatisfiable => 416,
            ErrorCode::Rejected | ErrorCode::IdempotencyMismatch => 422,
            ErrorCode::RateLimited => 429,
            ErrorCode::Internal => 500,
            ErrorCode::Unavailable => 503,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::AmbiguousCode => "ambiguous_code",
            ErrorCode::IdempotencyInProgress => "idempotency_in_progress",
            ErrorCode::AlreadyCovered => "already_covered",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::RangeNotSatisfiable => "range_not_satisfiable",
            ErrorCode::Rejected => "rejected",
            ErrorCode::IdempotencyMismatch => "idempotency_mismatch",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::Internal => "internal",
            ErrorCode::Unavailable => "unavailable",
        }
    }
}

/// A backing service (the database) cannot be reached right now: answered 503, not 500.
/// Adapters wrap such failures in it so the application layer can tell them from bugs.
#[derive(Debug, thiserror::Error)]
#[error("unavailable: {0}")]
pub struct Unavailable(pub String);
