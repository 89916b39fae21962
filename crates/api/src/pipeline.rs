//! The path every call takes, REST or MCP:
//! key → redact keys from the arguments → (one round trip: authenticate, count, claim) →
//! rate limit → access → input → idempotency outcome → handler → settle the claim.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::input::Args;
use crate::op::ErasedOp;
use fleetdesk_kernel::ErrorCode;
use fleetdesk_tenancy::gate::{Claim, ClaimRequest};
use fleetdesk_tenancy::ports::Authentication;
use fleetdesk_tenancy::{Caller, ParsedKey};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One call as a transport received it.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    /// The bearer token, without the `Bearer ` prefix.
    pub bearer: Option<String>,
    /// The Idempotency-Key header, or MCP's `request_id`.
    pub idempotency_key: Option<String>,
    pub args: Args,
    /// A problem the transport found reading the request (a JSON syntax error, a bad query
    /// string). It is answered after authentication, like any other input error, so an
    /// unauthenticated caller learns nothing about the body.
    pub input_error: Option<ApiError>,
    /// The service's address as the transport saw it (scheme and Host), for links.
    pub base_url: Option<String>,
}

/// A successful answer.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: u16,
    pub body: Value,
    /// Answered from a stored first result (`Idempotent-Replayed: true`).
    pub replayed: bool,
}

/// An Idempotency-Key is 1-200 visible ASCII characters.
pub fn check_idempotency_key(key: &str) -> Result<(), ApiError> {
    if key.is_empty() || key.len() > 200 || !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(ApiError::invalid(
            "Idempotency-Key",
            "must be 1-200 visible ASCII characters",
        ));
    }
    Ok(())
}

/// A bearer token of the right shape (401 otherwise; no database involved).
pub fn parse_bearer(bearer: Option<&str>) -> Result<ParsedKey, ApiError> {
    let bearer = bearer.ok_or_else(|| ApiError::unauthorized("missing bearer key"))?;
    ParsedKey::parse(bearer).map_err(|_| ApiError::unauthorized("malformed key"))
}

/// The caller of an admitted key: 401 when refused, 429 past the per-minute limit.
fn accept(authentication: Authentication, limit: i64) -> Result<Caller, ApiError> {
    match authentication {
        Authentication::Refused => Err(ApiError::unauthorized("unknown or revoked key")),
        Authentication::Accepted { window, .. } if window.hits > limit => {
            let wait = window.resets_in_seconds.max(1);
            Err(ApiError::new(
                ErrorCode::RateLimited,
                format!("more than {limit} requests this minute; retry in {wait} s"),
            )
            .with_extra("retry_after", wait))
        }
        Authentication::Accepted { caller, .. } => Ok(caller),
    }
}

/// Authenticates and counts a request that runs no operation (MCP `initialize`, `ping`,
/// `tools/list`).
pub async fn authenticate(ctx: &Ctx, bearer: Option<&str>) -> Result<Caller, ApiError> {
    let key = parse_bearer(bearer)?;
    let limit = ctx.config.rate_limit_per_minute;
    let admission = ctx.gate.admit(&key, limit, None).await?;
    accept(admission.authentication, limit)
}

/// The claim for an Idempotency-Key: the key and a SHA-256 of the operation and its canonical
/// arguments.
fn claim(spec: &crate::op::OpSpec, key: &str, args: &Args) -> ClaimRequest {
    let mut h = Sha256::new();
    h.update(spec.id().as_bytes());
    h.update([0]);
    h.update(args.canonical().as_bytes());
    ClaimRequest {
        key: key.to_owned(),
        request_hash: h.finalize().into(),
    }
}

/// Stores a success under its key. The effect has happened, so the caller gets its answer
/// even if storing fails after a retry; the claim then stays "running" and a resend within 10
/// minutes is answered 409 rather than acting twice.
async fn store_result(
    ctx: &Ctx,
    owner: uuid::Uuid,
    key: &str,
    status: u16,
    body: &serde_json::Value,
) {
    for attempt in 1..=2 {
        match ctx.gate.complete(owner, key, status, body).await {
            Ok(()) => return,
            Err(e) => tracing::error!(
                attempt,
                error = format!("{e:#}"),
                "storing an idempotent result failed"
            ),
        }
    }
}

/// Runs an operation whose credential is a link token and whose body is raw bytes: no key,
/// no rate window, no idempotency; the handler checks the token.
pub async fn execute_raw(
    ctx: &Ctx,
    op: &dyn ErasedOp,
    args: &Args,
    body: fleetdesk_kernel::body::Body,
    base_url: Option<String>,
) -> Result<Outcome, ApiError> {
    let prepared = op.prepare_raw(args)?;
    let mut ctx = ctx.clone();
    ctx.request_base = base_url;
    let reply = prepared(ctx, body).await?;
    Ok(Outcome {
        status: reply.status,
        body: reply.body,
        replayed: false,
    })
}

/// Replaces anything shaped like a key in every string of the arguments (path, query and body,
/// object keys included). This is the one place free text is cleaned: every field an operation
/// stores or echoes (a heartbeat's summary and run_id, a reason, a note, a failure reason, and
/// every later one) reaches its handler redacted, and the idempotency hash is taken over the
/// redacted arguments.
pub fn redact_args(args: &mut Args) {
    use fleetdesk_kernel::secrets::redact_json;
    for part in [&mut args.path, &mut args.query] {
        let mut value = Value::Object(std::mem::take(part));
        redact_json(&mut value);
        if let Value::Object(map) = value {
            *part = map;
        }
    }
    redact_json(&mut args.body);
}

pub async fn execute(
    ctx: &Ctx,
    op: &dyn ErasedOp,
    mut inv: Invocation,
) -> Result<Outcome, ApiError> {
    let spec = op.spec();
    let key = parse_bearer(inv.bearer.as_deref())?;
    redact_args(&mut inv.args);

    // A malformed Idempotency-Key claims nothing and is answered after authentication.
    let mut input_error = inv.input_error;
    let claim_request = match (&inv.idempotency_key, spec.idempotent) {
        (Some(k), true) if input_error.is_none() => {
            if let Err(e) = check_idempotency_key(k) {
                input_error = Some(e);
                None
            } else {
                Some(claim(spec, k, &inv.args))
            }
        }
        _ => None,
    };

    let limit = ctx.config.rate_limit_per_minute;
    let admission = ctx.gate.admit(&key, limit, claim_request.as_ref()).await?;
    let caller = accept(admission.authentication, limit)?;
    tracing::Span::current().record("key_id", tracing::field::display(caller.key_id()));

    let owner = caller.idempotency_owner();
    let held = matches!(admission.claim, Some(Claim::Claimed));
    let release = |e: ApiError| async {
        if held && let Some(c) = &claim_request {
            ctx.gate.release(owner, &c.key).await?;
        }
        Err::<Outcome, ApiError>(e)
    };

    if !spec.access.allows(&caller) {
        let message = match spec.access {
            crate::op::Access::Agent(scope) => {
                format!("this call needs an agent key with scope {}", scope.as_str())
            }
            crate::op::Access::Personal(access) => format!(
                "this call needs a personal key with {} access",
                access.as_str()
            ),
            crate::op::Access::Token => "this call takes the link's token, not a key".to_owned(),
        };
        return release(ApiError::forbidden(message)).await;
    }
    if let Some(mut e) = input_error {
        e.from_input = true;
        return release(e).await;
    }
    let prepared = match op.prepare(&inv.args) {
        Ok(p) => p,
        Err(mut e) => {
            e.from_input = true;
            return release(e).await;
        }
    };

    match admission.claim {
        None | Some(Claim::Claimed) => {}
        Some(Claim::Replay { status, body }) => {
            return Ok(Outcome {
                status,
                body,
                replayed: true,
            });
        }
        Some(Claim::Mismatch) => {
            return Err(ApiError::new(
                ErrorCode::IdempotencyMismatch,
                "this Idempotency-Key was used with different content in the last 24 hours",
            ));
        }
        Some(Claim::InProgress) => {
            return Err(ApiError::new(
                ErrorCode::IdempotencyInProgress,
                "the first request with this Idempotency-Key is still being processed",
            ));
        }
    }

    let mut ctx_for_call = ctx.clone();
    ctx_for_call.request_base = inv.base_url;
    let result = prepared(ctx_for_call, caller).await;
    match result {
        Ok(reply) if (200..300).contains(&reply.status) => {
            if held && let Some(c) = &claim_request {
                store_result(ctx, owner, &c.key, reply.status, &reply.body).await;
            }
            Ok(Outcome {
                status: reply.status,
                body: reply.body,
                replayed: false,
            })
        }
        Ok(reply) => Ok(Outcome {
            status: reply.status,
            body: reply.body,
            replayed: false,
        }),
        Err(e) => release(e).await,
    }
}
