use fleetdesk_kernel::ErrorCode;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;

/// The single error of every adapter: `{code, message, request_id, field?, ...extra}`.
/// The request id is added by the transport that answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub field: Option<String>,
    /// Extra members some errors need (`next_chunk`, `extra`, `retry_after`).
    pub extra: Map<String, Value>,
    /// Raised while reading the call's arguments (MCP answers these as invalid params).
    pub from_input: bool,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            field: None,
            extra: Map::new(),
            from_input: false,
        }
    }

    /// 400 naming the field at fault.
    pub fn invalid(field: impl Into<String>, message: impl fmt::Display) -> Self {
        let field = field.into();
        let message = format!("{field}: {message}");
        ApiError {
            field: Some(field),
            ..ApiError::new(ErrorCode::InvalidRequest, message)
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Unauthorized, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Forbidden, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::NotFound, message)
    }

    pub fn rejected(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Rejected, message)
    }

    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    pub fn with_extra(mut self, key: &str, value: impl Serialize) -> Self {
        self.extra.insert(
            key.to_owned(),
            serde_json::to_value(value).unwrap_or(Value::Null),
        );
        self
    }

    /// Anything unexpected: logged with its whole chain, answered without internals.
    pub fn internal(err: anyhow::Error) -> Self {
        tracing::error!(error = format!("{err:#}"), "internal error");
        ApiError::new(
            ErrorCode::Internal,
            "internal error; retry with the same Idempotency-Key",
        )
    }

    pub fn status(&self) -> u16 {
        self.code.http_status()
    }

    /// The error body, with the request id of the response that carries it.
    pub fn body(&self, request_id: &str) -> Value {
        let mut body = Map::new();
        body.insert("code".into(), Value::String(self.code.as_str().into()));
        body.insert("message".into(), Value::String(self.message.clone()));
        body.insert("request_id".into(), Value::String(request_id.into()));
        if let Some(field) = &self.field {
            body.insert("field".into(), Value::String(field.clone()));
        }
        for (k, v) in &self.extra {
            body.insert(k.clone(), v.clone());
        }
        Value::Object(body)
    }

    /// Seconds to wait, for rate_limited errors.
    pub fn retry_after(&self) -> Option<u64> {
        self.extra.get("retry_after").and_then(Value::as_u64)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<anyhow::Error> for ApiError {
    fn from(err: anyhow::Error) -> Self {
        // A database that cannot be reached is a 503, not a bug.
        if err
            .downcast_ref::<fleetdesk_kernel::error::Unavailable>()
            .is_some()
        {
            tracing::warn!(error = format!("{err:#}"), "database unavailable");
            return ApiError::new(
                ErrorCode::Unavailable,
                "the database is unavailable; retry shortly",
            );
        }
        ApiError::internal(err)
    }
}

/// The error body schema, for the OpenAPI description.
#[derive(Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// One of the codes of the Errors table.
    pub code: String,
    pub message: String,
    /// Same as the X-Request-Id response header.
    pub request_id: String,
    /// The field at fault, for invalid_request.
    pub field: Option<String>,
}
