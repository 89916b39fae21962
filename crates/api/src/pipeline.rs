//! The path every call takes, REST, MCP or the dashboard:
//! key (or the dashboard's session) → authenticate (one read) → rate limit (this instance's
//! leased tokens) → redact keys from the arguments → access → input → claim the
//! Idempotency-Key → handler on its own task → settle the claim.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::input::Args;
use crate::limiter::Admit;
use crate::op::{ErasedOp, Json};
use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::{ErrorCode, round_trips};
use fleetdesk_tenancy::gate::{Claim, ClaimRequest, Settlement};
use fleetdesk_tenancy::{Caller, ParsedKey};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tracing::Instrument;

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
    /// The JSON text to send.
    pub body: Json,
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

/// The caller of a usable key whose window has room: 401 when the key is refused, 429 past
/// the per-minute limit (`Retry-After`). One read; a write only when this instance leases
/// tokens.
async fn admit(ctx: &Ctx, key: &ParsedKey) -> Result<Caller, ApiError> {
    let caller = ctx
        .gate
        .authenticate(key)
        .await?
        .ok_or_else(|| ApiError::unauthorized("unknown or revoked key"))?;
    spend(ctx, caller).await
}

/// Spends one of the caller's key's tokens: the caller, or 429 past the per-minute limit.
async fn spend(ctx: &Ctx, caller: Caller) -> Result<Caller, ApiError> {
    let limit = ctx.config.rate_limit_per_minute;
    match ctx
        .limiter
        .admit(ctx.gate.as_ref(), caller.key_id(), limit)
        .await?
    {
        Admit::Pass => Ok(caller),
        Admit::Refused {
            retry_after_seconds: wait,
        } => Err(ApiError::new(
            ErrorCode::RateLimited,
            format!("more than {limit} requests in a minute; retry in {wait} s"),
        )
        .with_extra("retry_after", wait)),
    }
}

/// Authenticates and counts a request that runs no operation (MCP `initialize`, `ping`,
/// `tools/list`).
pub async fn authenticate(ctx: &Ctx, bearer: Option<&str>) -> Result<Caller, ApiError> {
    let key = parse_bearer(bearer)?;
    admit(ctx, &key).await
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

pub async fn execute(ctx: &Ctx, op: &dyn ErasedOp, inv: Invocation) -> Result<Outcome, ApiError> {
    let key = parse_bearer(inv.bearer.as_deref())?;
    let caller = admit(ctx, &key).await?;
    execute_as(ctx, op, caller, inv).await
}

/// The caller of a dashboard session (its token's SHA-256) whose key is still usable and
/// whose window has room: 401 when the session is unknown, expired or its key refused, 429
/// past the key's per-minute limit. A session spends its key's tokens.
pub async fn admit_session(ctx: &Ctx, session: &[u8; 32]) -> Result<Caller, ApiError> {
    let caller = ctx
        .gate
        .session(session)
        .await?
        .ok_or_else(|| ApiError::unauthorized("the session ended; sign in again"))?;
    spend(ctx, caller).await
}

/// 403 unless `caller` may call the operation.
pub fn allowed(spec: &crate::op::OpSpec, caller: &Caller) -> Result<(), ApiError> {
    if caller.may(spec.access) {
        return Ok(());
    }
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
    Err(ApiError::forbidden(message))
}

/// The operation `op` as the one bound to the handle `H` (500 when it is another).
fn bound<H: crate::op::Operation>(op: &dyn ErasedOp) -> Result<&crate::op::HandleOp<H>, ApiError> {
    op.as_any()
        .downcast_ref::<crate::op::HandleOp<H>>()
        .ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!(
                "{} is not bound to the handle asked for",
                op.spec().id()
            ))
        })
}

/// Runs a read bound to its handle `H` for an admitted caller with typed input, answering
/// the handler's typed output: the access check of [`execute_as`], then the handler. Only for
/// reads: a write's answer is stored under its Idempotency-Key, which [`call_write`] does.
pub async fn call<H: crate::op::Operation>(
    ctx: &Ctx,
    op: &dyn ErasedOp,
    caller: Caller,
    input: crate::input::Req<H::Path, H::Query, H::Body>,
    base_url: Option<String>,
) -> Result<H::Output, ApiError> {
    let spec = op.spec();
    let bound = bound::<H>(op)?;
    if !spec.reads_only() {
        return Err(ApiError::internal(anyhow::anyhow!(
            "{} writes: run it with call_write",
            spec.id()
        )));
    }
    tracing::Span::current().record("key_id", tracing::field::display(caller.key_id()));
    allowed(spec, &caller)?;
    let mut call_ctx = ctx.clone();
    call_ctx.request_base = base_url;
    Ok(bound.call(call_ctx, caller, input).await?.body)
}

/// Runs the operation bound to the handle `H` for a caller the transport admitted (the
/// dashboard's session), answering its typed output: every step of [`execute_as`] (redaction,
/// access, input, the Idempotency-Key's claim, the handler with its writes and stored answer
/// in one transaction), with the arguments parsed into `H`'s own types. A replay of the key's
/// first request answers that request's stored answer, read back as `H::Output`.
pub async fn call_write<H>(
    ctx: &Ctx,
    op: &dyn ErasedOp,
    caller: Caller,
    inv: Invocation,
) -> Result<H::Output, ApiError>
where
    H: crate::op::Operation,
    H::Path: crate::input::Part,
    H::Query: crate::input::Part,
    H::Body: crate::input::Part,
    H::Output: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
{
    let bound = bound::<H>(op)?;
    let run = |inv: &Invocation| {
        let input = <crate::input::Req<H::Path, H::Query, H::Body> as crate::input::Input>::parse(
            &inv.args,
        )?;
        let call = bound.call(ctx_for(ctx, inv), caller.clone(), input);
        Ok(Box::pin(async move {
            let reply = call.await?;
            let body = serde_json::value::to_raw_value(&reply.body)
                .map_err(|e| ApiError::internal(e.into()))?;
            Ok(Answer {
                value: reply.body,
                status: reply.status,
                body,
            })
        }) as BoxFuture<'static, _>)
    };
    match run_in_pipeline(ctx, op.spec(), &caller, inv, run).await? {
        Claimed::Ran(answer) => Ok(answer.value),
        Claimed::Replay { body, .. } => serde_json::from_value(body)
            .map_err(|e| ApiError::internal(anyhow::Error::from(e).context("a stored answer"))),
    }
}

/// Runs an operation for a caller the transport authenticated and admitted (the dashboard's
/// session): every later step of [`execute`], the same for every transport: redaction, access,
/// input, the Idempotency-Key's claim and the handler.
pub async fn execute_as(
    ctx: &Ctx,
    op: &dyn ErasedOp,
    caller: Caller,
    inv: Invocation,
) -> Result<Outcome, ApiError> {
    let run = |inv: &Invocation| {
        let prepared = op.prepare(&inv.args)?;
        let run = prepared(ctx_for(ctx, inv), caller.clone());
        Ok(Box::pin(async move {
            let reply = run.await?;
            Ok(Answer {
                value: (),
                status: reply.status,
                body: reply.body,
            })
        }) as BoxFuture<'static, _>)
    };
    Ok(
        match run_in_pipeline(ctx, op.spec(), &caller, inv, run).await? {
            Claimed::Ran(answer) => Outcome {
                status: answer.status,
                body: answer.body,
                replayed: false,
            },
            Claimed::Replay { status, body } => Outcome {
                status,
                body: serde_json::value::to_raw_value(&body)
                    .map_err(|e| ApiError::internal(e.into()))?,
                replayed: true,
            },
        },
    )
}

/// The context a call's handler runs with: the service's address as the transport saw it.
fn ctx_for(ctx: &Ctx, inv: &Invocation) -> Ctx {
    let mut call_ctx = ctx.clone();
    call_ctx.request_base = inv.base_url.clone();
    call_ctx
}

/// A handler's answer: what its caller reads (`value`), with the status and JSON text stored
/// under the Idempotency-Key for a replay.
struct Answer<T> {
    value: T,
    status: u16,
    body: Json,
}

/// What a call came to: its own run, or the stored answer of the key's first request.
enum Claimed<T> {
    Ran(Answer<T>),
    Replay { status: u16, body: Value },
}

/// A handler's run, ready to start: what [`run_in_pipeline`] runs once the input is read.
type Run<T> = BoxFuture<'static, Result<Answer<T>, ApiError>>;

/// The steps every call takes after admission, in order: redaction, access, input errors (what
/// the transport could not read, a malformed Idempotency-Key, then `prepare`, which parses the
/// operation's own fields), the Idempotency-Key's claim, and `prepare`'s run. Nothing is
/// claimed before the input is good.
async fn run_in_pipeline<T: Send + 'static>(
    ctx: &Ctx,
    spec: &crate::op::OpSpec,
    caller: &Caller,
    mut inv: Invocation,
    prepare: impl FnOnce(&Invocation) -> Result<Run<T>, ApiError>,
) -> Result<Claimed<T>, ApiError> {
    redact_args(&mut inv.args);
    tracing::Span::current().record("key_id", tracing::field::display(caller.key_id()));

    allowed(spec, caller)?;
    let from_input = |mut e: ApiError| {
        e.from_input = true;
        e
    };
    if let Some(e) = inv.input_error.take() {
        return Err(from_input(e));
    }
    take_body_echoes(spec, &mut inv).map_err(from_input)?;
    let claim_request = match (&inv.idempotency_key, spec.idempotent) {
        (Some(k), true) => {
            check_idempotency_key(k).map_err(from_input)?;
            Some(claim(spec, k, &inv.args))
        }
        _ => None,
    };
    let work = prepare(&inv).map_err(from_input)?;
    let Some(claim_request) = claim_request else {
        return Ok(Claimed::Ran(work.await?));
    };

    let owner = caller.idempotency_owner();
    match ctx.gate.claim(owner, &claim_request).await? {
        Claim::Claimed => {}
        Claim::Replay { status, body } => return Ok(Claimed::Replay { status, body }),
        Claim::Mismatch => {
            return Err(ApiError::new(
                ErrorCode::IdempotencyMismatch,
                "this Idempotency-Key was used with different content in the last 24 hours",
            ));
        }
        Claim::InProgress => {
            return Err(ApiError::new(
                ErrorCode::IdempotencyInProgress,
                "the first request with this Idempotency-Key is still being processed",
            ));
        }
    }

    // A claimed request runs to its end on its own task, even when its caller goes away: the
    // retry then finds its result instead of running it twice. Its writes and its result (or
    // the key's release) commit in one transaction (`Gatekeeper::run_claimed`), so a crash
    // leaves both or neither. If it panics, or that transaction fails, its claim is released.
    let held = HeldClaim {
        gate: ctx.gate.clone(),
        owner,
        key: Some(claim_request.key),
    };
    // The task logs in the request's span and its statements count as the request's.
    let task = tokio::spawn(
        round_trips::counting(async move {
            let mut held = held;
            let Some(key) = held.key.clone() else {
                unreachable!("a held claim holds its key until it is settled")
            };
            let mut result = None;
            let work = async {
                let answer = work.await;
                let settlement = match &answer {
                    Ok(a) if (200..300).contains(&a.status) => Settlement::Store {
                        status: a.status,
                        body: a.body.clone(),
                    },
                    _ => Settlement::Release,
                };
                result = Some(answer);
                settlement
            };
            match held
                .gate
                .clone()
                .run_claimed(owner, &key, Box::pin(work))
                .await
            {
                Ok(()) => held.key = None,
                Err(e) => {
                    // Nothing of the request was committed: free the key for its retry.
                    held.release().await?;
                    return Err(ApiError::from(e));
                }
            }
            result.unwrap_or_else(|| {
                Err(ApiError::internal(anyhow::anyhow!(
                    "a claimed request settled without running"
                )))
            })
        })
        .instrument(tracing::Span::current()),
    );
    match task.await {
        Ok((trips, result)) => {
            round_trips::record_round_trips(trips);
            result.map(Claimed::Ran)
        }
        Err(e) => Err(ApiError::internal(anyhow::anyhow!(
            "the request's task ended: {e}"
        ))),
    }
}

/// Takes out of a JSON body what the specification lets a client repeat there: a path
/// parameter (`id` of `POST /posts/{id}/unstock`), which must equal the path's, and `request_id`
/// of an operation whose tool takes it, which plays the Idempotency-Key (a header that says
/// otherwise is 400 naming `request_id`). The operation then reads the body without them, and
/// the idempotency hash is the same whichever way the client said it. MCP arguments never reach
/// here with either: the tool call already split them off.
pub fn take_body_echoes(spec: &crate::op::OpSpec, inv: &mut Invocation) -> Result<(), ApiError> {
    let Value::Object(body) = &mut inv.args.body else {
        return Ok(());
    };
    for param in spec.path_params() {
        let Some(echo) = body.remove(param) else {
            continue;
        };
        if inv.args.path.get(param) != Some(&echo) {
            return Err(ApiError::invalid(
                param,
                format!("must equal the path's {param} when given in the body"),
            ));
        }
    }
    if spec.request_id
        && let Some(given) = body.remove(REQUEST_ID)
    {
        let Value::String(given) = given else {
            return Err(ApiError::invalid(REQUEST_ID, "must be a string"));
        };
        check_idempotency_key(&given)
            .map_err(|_| ApiError::invalid(REQUEST_ID, "must be 1-200 visible ASCII characters"))?;
        match &inv.idempotency_key {
            Some(header) if *header != given => {
                return Err(ApiError::invalid(
                    REQUEST_ID,
                    "differs from the Idempotency-Key header; send one of them, or the same value",
                ));
            }
            _ => inv.idempotency_key = Some(given),
        }
    }
    Ok(())
}

/// The body field (and MCP argument) that plays the Idempotency-Key.
pub const REQUEST_ID: &str = "request_id";

/// The Idempotency-Key a running request holds: settled with its request
/// (`Gatekeeper::run_claimed`), released when that failed, and released on drop when the
/// request ended some other way (a panic).
struct HeldClaim {
    gate: std::sync::Arc<dyn fleetdesk_tenancy::gate::Gatekeeper>,
    owner: uuid::Uuid,
    key: Option<String>,
}

impl HeldClaim {
    async fn release(&mut self) -> Result<(), ApiError> {
        if let Some(key) = self.key.take() {
            self.gate.release(self.owner, &key).await?;
        }
        Ok(())
    }
}

impl Drop for HeldClaim {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let (gate, owner) = (self.gate.clone(), self.owner);
            tokio::spawn(async move {
                if let Err(e) = gate.release(owner, &key).await {
                    tracing::error!(error = format!("{e:#}"), "releasing a claim failed");
                }
            });
        }
    }
}
