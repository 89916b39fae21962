//! Operations as the interface describes them: which API, method and path, who may call,
//! the MCP tool, idempotency, the texts. One [`OpSpec`] is the whole description of an
//! endpoint but its types; an [`Operation`] adds them, so a server, a dashboard and a client
//! name one endpoint by one type.

use crate::access::{PersonalAccess, Scope};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// `/api/agent/v1`
    Agent,
    /// `/api/user/v1`
    Personal,
}

impl Api {
    pub fn prefix(self) -> &'static str {
        match self {
            Api::Agent => "/api/agent/v1",
            Api::Personal => "/api/user/v1",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Api::Agent => "agent",
            Api::Personal => "personal",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpMethod {
    Get,
    Post,
    Put,
}

impl HttpMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
        }
    }
}

/// Who may call an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// An agent key whose role has this scope.
    Agent(Scope),
    /// A personal key whose member has this access.
    Personal(PersonalAccess),
    /// No key: the link's own token (`t`) is the credential. The body is raw bytes.
    Token,
}

impl Access {
    /// The `scope` column of endpoints.tsv.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Agent(s) => s.as_str(),
            Access::Personal(p) => p.as_str(),
            Access::Token => "token",
        }
    }
}

/// Everything about an operation except its types and handler. Built one way only:
/// [`OpSpec::agent`], [`OpSpec::personal`] or [`OpSpec::token_put`], then its settings
/// (outside this crate no literal can build one).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OpSpec {
    pub api: Api,
    pub method: HttpMethod,
    /// Path under the API prefix, with `{name}` parameters.
    pub path: &'static str,
    pub access: Access,
    /// The MCP tool, when the operation is one.
    pub tool: Option<&'static str>,
    /// When one tool stands for several operations (`decide_issue` is both `/resolve` and
    /// `/dismiss`): the value of the tool's [`OpSpec::TOOL_ROUTE_ARG`] argument that selects
    /// this operation. Operations sharing a tool name must each have a distinct one.
    pub tool_action: Option<&'static str>,
    /// A path parameter the tool names otherwise, `(parameter, argument)`: the specification's
    /// `report_wiki_sync` takes `source_id` for the path's `{id}`.
    pub tool_path_arg: Option<(&'static str, &'static str)>,
    /// Honours the Idempotency-Key header.
    pub idempotent: bool,
    /// Takes the MCP `request_id` argument in the role of the Idempotency-Key.
    pub request_id: bool,
    pub summary: &'static str,
    pub description: &'static str,
    /// The status of a success that creates something, 201; otherwise 200.
    pub created_status: bool,
    /// Every success creates (201 only): the description advertises no 200 "already
    /// existed" (a call whose repeat is refused, not answered 200).
    pub created_always: bool,
    /// Largest request body accepted, in bytes.
    pub max_body: usize,
    /// Statuses beyond those the description derives from the rest (every keyed call: 400,
    /// 401, 403, 413, 429, 500, 503; with path parameters 404; with `{code}` or an
    /// Idempotency-Key 409; a write 422): 404 when the body or query names an object by id
    /// or name, 409 when it names an account by code (ambiguous).
    pub also_answers: &'static [u16],
}

impl OpSpec {
    pub const DEFAULT_MAX_BODY: usize = 1024 * 1024;
    /// The MCP argument whose value picks the operation of a tool that stands for several.
    pub const TOOL_ROUTE_ARG: &'static str = "action";

    /// An Agent API operation open to keys whose role has `scope`; the rest is set by the
    /// builder methods below (no tool, not idempotent, 200, the default body limit).
    ///
    /// ```ignore
    /// OpSpec::agent(HttpMethod::Post, "/posts/{id}/stock", Scope::DraftsWrite)
    ///     .tool("stock_post")
    ///     .idempotent()
    ///     .summary("Move one of your posts to inventory")
    ///     .description("From draft, review, approved or scheduled. ...")
    /// ```
    pub const fn agent(method: HttpMethod, path: &'static str, scope: Scope) -> OpSpec {
        OpSpec::new(Api::Agent, method, path, Access::Agent(scope))
    }

    /// A Personal API operation open to members with `access`.
    pub const fn personal(
        method: HttpMethod,
        path: &'static str,
        access: PersonalAccess,
    ) -> OpSpec {
        OpSpec::new(Api::Personal, method, path, Access::Personal(access))
    }

    /// An Agent API PUT whose credential is the link's token and whose body is raw bytes of at
    /// most `max_body`, handed to the handler as it arrives (the API's `raw_operation`).
    pub const fn token_put(path: &'static str, max_body: u64) -> OpSpec {
        OpSpec::new(Api::Agent, HttpMethod::Put, path, Access::Token).max_body(max_body as usize)
    }

    const fn new(api: Api, method: HttpMethod, path: &'static str, access: Access) -> OpSpec {
        OpSpec {
            api,
            method,
            path,
            access,
            tool: None,
            tool_action: None,
            tool_path_arg: None,
            idempotent: false,
            request_id: false,
            summary: "",
            description: "",
            created_status: false,
            created_always: false,
            max_body: OpSpec::DEFAULT_MAX_BODY,
            also_answers: &[],
        }
    }

    /// Served as the MCP tool `name` too.
    pub const fn tool(mut self, name: &'static str) -> OpSpec {
        self.tool = Some(name);
        self
    }

    /// One of several operations of a shared tool, picked by this value of
    /// [`OpSpec::TOOL_ROUTE_ARG`].
    pub const fn tool_action(mut self, action: &'static str) -> OpSpec {
        self.tool_action = Some(action);
        self
    }

    /// As a tool, the path parameter `param` is the argument `arg`.
    pub const fn tool_path_arg(mut self, param: &'static str, arg: &'static str) -> OpSpec {
        self.tool_path_arg = Some((param, arg));
        self
    }

    /// The tool argument that carries the path parameter `param`.
    pub fn tool_arg_of(&self, param: &'static str) -> &'static str {
        match self.tool_path_arg {
            Some((p, arg)) if p == param => arg,
            _ => param,
        }
    }

    /// Honours the Idempotency-Key header and, as a tool, the `request_id` argument.
    pub const fn idempotent(mut self) -> OpSpec {
        self.idempotent = true;
        self.request_id = true;
        self
    }

    /// Honours the Idempotency-Key header; the tool takes no `request_id`.
    pub const fn idempotency_key_only(mut self) -> OpSpec {
        self.idempotent = true;
        self.request_id = false;
        self
    }

    pub const fn summary(mut self, summary: &'static str) -> OpSpec {
        self.summary = summary;
        self
    }

    pub const fn description(mut self, description: &'static str) -> OpSpec {
        self.description = description;
        self
    }

    /// A success that creates something answers 201.
    pub const fn created(mut self) -> OpSpec {
        self.created_status = true;
        self
    }

    /// Every success answers 201 (never 200): a repeat is refused or replayed, not found
    /// already done.
    pub const fn created_always(mut self) -> OpSpec {
        self.created_status = true;
        self.created_always = true;
        self
    }

    pub const fn max_body(mut self, bytes: usize) -> OpSpec {
        self.max_body = bytes;
        self
    }

    /// Statuses beyond those derived from the rest (see the field).
    pub const fn also_answers(mut self, statuses: &'static [u16]) -> OpSpec {
        self.also_answers = statuses;
        self
    }

    /// The operation only reads: a GET, or a POST under a read scope (the community
    /// assistant's searches take their question as a body).
    pub fn reads_only(&self) -> bool {
        self.method == HttpMethod::Get
            || matches!(self.access, Access::Agent(scope) if scope.as_str().ends_with(":read"))
    }

    /// Stable id: `agent GET /accounts`.
    pub fn id(&self) -> String {
        format!(
            "{} {} {}",
            self.api.as_str(),
            self.method.as_str(),
            self.path
        )
    }

    pub fn full_path(&self) -> String {
        format!("{}{}", self.api.prefix(), self.path)
    }

    /// The `{name}` parameters of the path, in order.
    pub fn path_params(&self) -> Vec<&'static str> {
        self.path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .collect()
    }
}

/// The typed input of an operation: its path parameters, query parameters and body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Req<P, Q, B> {
    pub path: P,
    pub query: Q,
    pub body: B,
}

/// A part an operation does not have (no path parameters, no query or no body). Reads and
/// ignores anything; written, it is nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Nothing;

impl<'de> serde::Deserialize<'de> for Nothing {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Nothing)
    }
}

impl serde::Serialize for Nothing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_unit()
    }
}

/// One endpoint with its types: the handle a server binds its handler to and a client calls.
/// The parts are [`Nothing`] where the endpoint has none.
pub trait Operation: 'static {
    /// The `{name}` parameters of the path, as an object.
    type Path;
    type Query;
    type Body;
    /// The answer of a success.
    type Output;
    const SPEC: OpSpec;
}

/// Declares [`Operation`] handles: `pub Name(Path, Query, Body) -> Output = SPEC;`.
#[macro_export]
macro_rules! operations {
    ($($(#[$meta:meta])* $vis:vis $name:ident($path:ty, $query:ty, $body:ty) -> $out:ty = $spec:expr;)+) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, Copy)]
        $vis struct $name;

        impl $crate::op::Operation for $name {
            type Path = $path;
            type Query = $query;
            type Body = $body;
            type Output = $out;
            const SPEC: $crate::op::OpSpec = $spec;
        }
    )+};
}
