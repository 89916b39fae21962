use fleetdesk_kernel::ErrorCode;
use fleetdesk_kernel::secrets::redact_keys;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt;

/// The single error of every adapter: `{code, message, request_id, field?, ...extra}`.
/// The request id is added by the transport that answers.
///
/// Messages and field names never carry a key: anything key-shaped is redacted when the error
/// is made (a path, a field name or a value may echo what the caller sent).
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
            message: redact_keys(&message.into()).0,
            field: None,
            extra: Map::new(),
            from_input: false,
        }
    }

    /// 400 naming the field at fault.
    pub fn invalid(field: impl Into<String>, message: impl fmt::Display) -> Self {
        let field = redact_keys(&field.into()).0;
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
        self.field = Some(redact_keys(&field.into()).0);
        self
    }

    /// The call broke a rule its schema states, though the answer is the status the
    /// specification gives that case (not 400): MCP answers it as invalid params all the same.
    pub fn breaking_schema(mut self) -> Self {
        self.from_input = true;
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

impl From<fleetdesk_tenancy::caller::OrganizationRefusal> for ApiError {
    fn from(r: fleetdesk_tenancy::caller::OrganizationRefusal) -> Self {
        use fleetdesk_tenancy::caller::OrganizationRefusal::*;
        match r {
            NoOrganization => ApiError::forbidden(r.to_string()),
            NotInView => ApiError::not_found(r.to_string()).with_field("organization"),
        }
    }
}

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
        if let Some(conflict) = err.downcast_ref::<fleetdesk_kernel::error::Conflict>() {
            return ApiError::rejected(conflict.to_string());
        }
        ApiError::internal(err)
    }
}

/// A serde error message without the value that was sent: serde echoes it (`unknown variant
/// \`fda_...\``, `invalid type: string "..."`), and a value may be a credential pasted into
/// the wrong field. The message says what is expected instead.
pub fn serde_message(message: &str) -> String {
    const SEP: &str = ", expected ";
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        return match rest.rfind(SEP) {
            Some(i) => {
                let expected = &rest[i + SEP.len()..];
                if expected.starts_with("one of ") {
                    format!("must be {expected}")
                } else {
                    format!("must be one of {expected}")
                }
            }
            None => "is not one of the accepted values".to_owned(),
        };
    }
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        let Some(i) = rest.rfind(SEP) else {
            return "has the wrong type".to_owned();
        };
        let expected = &rest[i + SEP.len()..];
        return format!("must be {expected}, not {}", sent_kind(&rest[..i]));
    }
    if let Some(rest) = message.strip_prefix("invalid value: ") {
        return match rest.rfind(SEP) {
            Some(i) => format!("must be {}", &rest[i + SEP.len()..]),
            None => "is not an accepted value".to_owned(),
        };
    }
    redact_keys(message).0
}

/// What kind of value serde's `Unexpected` describes, without the value.
fn sent_kind(unexpected: &str) -> &'static str {
    const KINDS: [(&str, &str); 9] = [
        ("string", "a string"),
        ("integer", "an integer"),
        ("floating point", "a number"),
        ("boolean", "a boolean"),
        ("null", "null"),
        ("unit", "null"),
        ("map", "an object"),
        ("sequence", "an array"),
        ("char", "a string"),
    ];
    KINDS
        .iter()
        .find(|(prefix, _)| unexpected.starts_with(prefix))
        .map(|(_, kind)| *kind)
        .unwrap_or("another type")
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

impl From<fleetdesk_kernel::wire::fields::Invalid> for ApiError {
    fn from(e: fleetdesk_kernel::wire::fields::Invalid) -> ApiError {
        ApiError::invalid(e.field, e.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "fda_AbCd1234_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ";

    #[test]
    fn serde_messages_name_what_is_expected_not_what_was_sent() {
        let cases = [
            (
                format!("unknown variant `{KEY}`, expected one of `threads`, `x`"),
                "must be one of `threads`, `x`",
            ),
            (
                format!("unknown variant `{KEY}`, expected `banned`"),
                "must be one of `banned`",
            ),
            (
                format!("invalid type: string \"{KEY}\", expected u32"),
                "must be u32, not a string",
            ),
            (
                format!("invalid type: string \"a, expected b{KEY}\", expected a boolean"),
                "must be a boolean, not a string",
            ),
            (
                "invalid type: integer `123456`, expected a string".to_owned(),
                "must be a string, not an integer",
            ),
            (
                "invalid type: map, expected a sequence".to_owned(),
                "must be a sequence, not an object",
            ),
            (
                format!("invalid value: string \"{KEY}\", expected a date"),
                "must be a date",
            ),
        ];
        for (raw, want) in cases {
            let got = serde_message(&raw);
            assert_eq!(got, want, "{raw}");
        }
        assert_eq!(
            serde_message("must be 1-40 characters"),
            "must be 1-40 characters"
        );
        assert_eq!(
            serde_message(&format!("unknown field `{KEY}`, expected `a`")),
            "unknown field `[redacted key]`, expected `a`"
        );
    }

    #[test]
    fn errors_never_carry_a_key() {
        let e = ApiError::invalid(KEY, format!("got {KEY}"));
        assert!(!e.message.contains(KEY) && !e.field.as_deref().unwrap().contains(KEY));
        let e = ApiError::not_found(format!("no route for GET /x/{KEY}"));
        assert_eq!(e.message, "no route for GET /x/[redacted key]");
        let e = ApiError::new(ErrorCode::Rejected, "r").with_field(KEY);
        assert_eq!(e.field.as_deref(), Some("[redacted key]"));
    }
}
