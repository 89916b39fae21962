//! Operations: one endpoint of the specification, described once, served by REST and MCP.

use crate::ctx::Ctx;
use crate::error::ApiError;
use crate::input::{Args, Input, InputDoc, Part, Req};
use fleetdesk_kernel::BoxFuture;
use fleetdesk_kernel::body::Body;
use fleetdesk_tenancy::{AgentCaller, Caller, MemberCaller};

pub use fleetdesk_kernel::op::{Access, Api, HttpMethod, OpSpec, Operation};
use serde::Serialize;
use serde_json::value::RawValue;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use utoipa::ToSchema;
use utoipa::openapi::{RefOr, Schema};

/// A successful result with its status.
#[derive(Debug, Clone)]
pub struct Reply<O> {
    pub status: u16,
    pub body: O,
}

impl<O> Reply<O> {
    pub fn ok(body: O) -> Self {
        Reply { status: 200, body }
    }

    pub fn created(body: O) -> Self {
        Reply { status: 201, body }
    }

    /// 201 when the call created something, else 200: the answer of a create that a resend
    /// finds already done.
    pub fn created_if(created: bool, body: O) -> Self {
        if created {
            Reply::created(body)
        } else {
            Reply::ok(body)
        }
    }
}

/// A reply body serialized once, straight from the handler's output type: the transports
/// send these bytes as they are, and a stored idempotent result is this text.
pub type Json = Box<RawValue>;

/// A parsed call, ready to run.
pub type Prepared =
    Box<dyn FnOnce(Ctx, Caller) -> BoxFuture<'static, Result<Reply<Json>, ApiError>> + Send>;

/// A parsed call whose body is raw bytes read as they arrive, ready to run (the upload PUTs).
pub type PreparedRaw =
    Box<dyn FnOnce(Ctx, Body) -> BoxFuture<'static, Result<Reply<Json>, ApiError>> + Send>;

/// The schemas the description needs: input parts, output, and their components.
pub struct OpDoc {
    pub input: InputDoc,
    pub output: RefOr<Schema>,
    pub output_name: std::borrow::Cow<'static, str>,
    pub output_components: Vec<(String, RefOr<Schema>)>,
}

/// An operation with its types erased, as the adapters hold it.
pub trait ErasedOp: Send + Sync + 'static {
    fn spec(&self) -> &OpSpec;
    /// Parses and validates the arguments (400 on failure); nothing runs yet.
    fn prepare(&self, args: &Args) -> Result<Prepared, ApiError>;
    /// For [`Access::Token`] operations: parses the path and query; the body comes as a
    /// [`Body`] the handler reads.
    fn prepare_raw(&self, _args: &Args) -> Result<PreparedRaw, ApiError> {
        Err(ApiError::internal(anyhow::anyhow!(
            "{} takes a JSON body",
            self.spec().id()
        )))
    }
    fn doc(&self) -> OpDoc;
    /// The operation as its concrete type: a [`HandleOp`] for one bound to its handle.
    fn as_any(&self) -> &dyn std::any::Any {
        &()
    }
}

fn op_doc<I: Input, O: ToSchema>() -> OpDoc {
    let mut output_components = Vec::new();
    O::schemas(&mut output_components);
    OpDoc {
        input: I::describe(),
        output: O::schema(),
        output_name: O::name(),
        output_components,
    }
}

/// The reply as JSON text, without a `Value` tree in between.
fn to_json<O: Serialize>(reply: Reply<O>) -> Result<Reply<Json>, ApiError> {
    let body =
        serde_json::value::to_raw_value(&reply.body).map_err(|e| ApiError::internal(e.into()))?;
    Ok(Reply {
        status: reply.status,
        body,
    })
}

/// Who a handler acts for, as its second argument: the authenticated [`Caller`], or the agent
/// or member behind it (the pipeline has already checked the key kind against the access).
pub trait FromCaller: Sized + Send + 'static {
    fn from_caller(caller: Caller) -> Result<Self, ApiError>;
}

impl FromCaller for Caller {
    fn from_caller(caller: Caller) -> Result<Self, ApiError> {
        Ok(caller)
    }
}

impl FromCaller for AgentCaller {
    fn from_caller(caller: Caller) -> Result<Self, ApiError> {
        match caller {
            Caller::Agent(a) => Ok(a),
            Caller::Member(_) => Err(ApiError::forbidden("this call needs an agent key")),
        }
    }
}

impl FromCaller for MemberCaller {
    fn from_caller(caller: Caller) -> Result<Self, ApiError> {
        match caller {
            Caller::Member(m) => Ok(m),
            Caller::Agent(_) => Err(ApiError::forbidden("this call needs a personal key")),
        }
    }
}

struct TypedOp<C, I, O, F> {
    spec: OpSpec,
    handler: F,
    _types: PhantomData<fn(C, I) -> O>,
}

impl<C, I, O, F, Fut> ErasedOp for TypedOp<C, I, O, F>
where
    C: FromCaller,
    I: Input,
    O: Serialize + ToSchema + Send + 'static,
    F: Fn(Ctx, C, I) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply<O>, ApiError>> + Send + 'static,
{
    fn spec(&self) -> &OpSpec {
        &self.spec
    }

    fn prepare(&self, args: &Args) -> Result<Prepared, ApiError> {
        let input = I::parse(args)?;
        let handler = self.handler.clone();
        Ok(Box::new(move |ctx, caller| {
            Box::pin(async move {
                let caller = C::from_caller(caller)?;
                to_json(handler(ctx, caller, input).await?)
            })
        }))
    }

    fn doc(&self) -> OpDoc {
        op_doc::<I, O>()
    }
}

/// Wraps a typed handler as a catalogue entry.
pub fn operation<C, I, O, F, Fut>(spec: OpSpec, handler: F) -> Box<dyn ErasedOp>
where
    C: FromCaller,
    I: Input,
    O: Serialize + ToSchema + Send + 'static,
    F: Fn(Ctx, C, I) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply<O>, ApiError>> + Send + 'static,
{
    Box::new(TypedOp {
        spec,
        handler,
        _types: PhantomData,
    })
}

/// A handle's handler with its caller type erased: typed input in, typed answer out.
type TypedCall<H> = Arc<
    dyn Fn(
            Ctx,
            Caller,
            Req<<H as Operation>::Path, <H as Operation>::Query, <H as Operation>::Body>,
        ) -> BoxFuture<'static, Result<Reply<<H as Operation>::Output>, ApiError>>
        + Send
        + Sync,
>;

/// An operation bound to its handle: served from [`Args`] like any other, and callable with
/// the handle's own types ([`ErasedOp::as_any`], `pipeline::call`), so a caller in this
/// process reads its typed answer without JSON in between.
pub struct HandleOp<H: Operation> {
    spec: OpSpec,
    call: TypedCall<H>,
}

impl<H: Operation> HandleOp<H> {
    /// The handler's run for `caller` (already admitted and allowed) with `input`, ready to
    /// await (it borrows nothing of the operation, so it may run on a task of its own).
    pub fn call(
        &self,
        ctx: Ctx,
        caller: Caller,
        input: Req<H::Path, H::Query, H::Body>,
    ) -> BoxFuture<'static, Result<Reply<H::Output>, ApiError>> {
        (self.call)(ctx, caller, input)
    }
}

impl<H> ErasedOp for HandleOp<H>
where
    H: Operation,
    H::Path: Part,
    H::Query: Part,
    H::Body: Part,
    H::Output: Serialize + ToSchema + Send + 'static,
{
    fn spec(&self) -> &OpSpec {
        &self.spec
    }

    fn prepare(&self, args: &Args) -> Result<Prepared, ApiError> {
        let input = Req::<H::Path, H::Query, H::Body>::parse(args)?;
        let call = self.call.clone();
        Ok(Box::new(move |ctx, caller| {
            Box::pin(async move { to_json(call(ctx, caller, input).await?) })
        }))
    }

    fn doc(&self) -> OpDoc {
        op_doc::<Req<H::Path, H::Query, H::Body>, H::Output>()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Binds a handler to an operation's handle: the handle's description and types, served by
/// `handler`, and callable with those types.
pub fn bind<H, C, F, Fut>(handler: F) -> Box<dyn ErasedOp>
where
    H: Operation,
    H::Path: Part,
    H::Query: Part,
    H::Body: Part,
    H::Output: Serialize + ToSchema + Send + 'static,
    C: FromCaller,
    F: Fn(Ctx, C, Req<H::Path, H::Query, H::Body>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply<H::Output>, ApiError>> + Send + 'static,
{
    let call: TypedCall<H> = Arc::new(move |ctx, caller, input| {
        let handler = handler.clone();
        Box::pin(async move { handler(ctx, C::from_caller(caller)?, input).await })
    });
    Box::new(HandleOp::<H> {
        spec: H::SPEC,
        call,
    })
}

struct RawOperation<I, O, F> {
    spec: OpSpec,
    handler: F,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O, F, Fut> ErasedOp for RawOperation<I, O, F>
where
    I: Input,
    O: Serialize + ToSchema + Send + 'static,
    F: Fn(Ctx, I, Body) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply<O>, ApiError>> + Send + 'static,
{
    fn spec(&self) -> &OpSpec {
        &self.spec
    }

    fn prepare(&self, _args: &Args) -> Result<Prepared, ApiError> {
        Err(ApiError::internal(anyhow::anyhow!(
            "{} takes a raw body",
            self.spec.id()
        )))
    }

    fn prepare_raw(&self, args: &Args) -> Result<PreparedRaw, ApiError> {
        let input = I::parse(args)?;
        let handler = self.handler.clone();
        Ok(Box::new(move |ctx, body| {
            Box::pin(async move { to_json(handler(ctx, input, body).await?) })
        }))
    }

    fn doc(&self) -> OpDoc {
        op_doc::<I, O>()
    }
}

/// Wraps a handler whose credential is a link token and whose body is raw bytes, read by the
/// handler as they arrive (the transport ends the body with `TooLarge` past `spec.max_body`).
pub fn raw_operation<I, O, F, Fut>(spec: OpSpec, handler: F) -> Box<dyn ErasedOp>
where
    I: Input,
    O: Serialize + ToSchema + Send + 'static,
    F: Fn(Ctx, I, Body) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply<O>, ApiError>> + Send + 'static,
{
    debug_assert_eq!(spec.access, Access::Token);
    Box::new(RawOperation {
        spec,
        handler,
        _types: PhantomData,
    })
}

/// Binds a handler whose body is raw bytes ([`raw_operation`]) to an operation's handle.
pub fn bind_raw<H, F, Fut>(handler: F) -> Box<dyn ErasedOp>
where
    H: Operation,
    H::Path: Part,
    H::Query: Part,
    H::Body: Part,
    H::Output: Serialize + ToSchema + Send + 'static,
    F: Fn(Ctx, Req<H::Path, H::Query, H::Body>, Body) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Reply<H::Output>, ApiError>> + Send + 'static,
{
    raw_operation(H::SPEC, handler)
}
