//! Input and output pieces several operations share.

use crate::error::ApiError;
use crate::op::{Access, Api, HttpMethod, OpSpec};
use fleetdesk_accounts::ports::{CodeRef, LookupError};
use fleetdesk_kernel::{AccountCode, Platform};
use fleetdesk_tenancy::{AgentCaller, Caller, Scope};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

/// `{code}`: a current or legacy account code.
#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
pub struct CodePath {
    /// Current or legacy account code, 1-40 characters.
    #[validate(length(min = 1, max = 40))]
    #[schema(min_length = 1, max_length = 40)]
    pub code: String,
}

/// `platform`: only needed when a legacy code is repeated across platforms.
#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
pub struct PlatformQuery {
    pub platform: Option<Platform>,
}

impl CodePath {
    pub fn code_ref(&self, platform: Option<Platform>) -> Result<CodeRef, ApiError> {
        let code = AccountCode::parse(&self.code).map_err(|e| ApiError::invalid("code", e))?;
        Ok(CodeRef { code, platform })
    }
}

/// Where a relayed or reported instruction came from.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
pub struct Origin {
    pub platform: OriginPlatform,
    #[validate(length(max = 200))]
    #[schema(max_length = 200)]
    pub gateway: Option<String>,
    #[validate(length(max = 200))]
    #[schema(max_length = 200)]
    pub channel: Option<String>,
    #[validate(length(max = 200))]
    #[schema(max_length = 200)]
    pub thread: Option<String>,
    #[validate(length(max = 80))]
    #[schema(max_length = 80)]
    pub requester: Option<String>,
    #[validate(length(max = 200))]
    #[schema(max_length = 200)]
    pub message_ref: Option<String>,
}

/// The chat gateways an instruction can come through; anything else is `other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OriginPlatform {
    Feishu,
    Dingtalk,
    Telegram,
    Discord,
    Cli,
    Other,
}

/// The agent a response speaks for.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AgentBrief {
    pub id: Uuid,
    pub name: String,
}

impl From<&AgentCaller> for AgentBrief {
    fn from(a: &AgentCaller) -> Self {
        AgentBrief {
            id: a.agent_id,
            name: a.agent_name.clone(),
        }
    }
}

/// The agent behind a caller; the pipeline has already checked the key kind.
pub fn agent(caller: &Caller) -> Result<&AgentCaller, ApiError> {
    match caller {
        Caller::Agent(a) => Ok(a),
        Caller::Member(_) => Err(ApiError::forbidden("this call needs an agent key")),
    }
}

/// The error of a `code` that names none of the caller's accounts.
pub fn lookup_error(e: LookupError, code: &str) -> ApiError {
    match e {
        LookupError::NotFound => {
            ApiError::not_found(format!("no account {code} in this workspace"))
        }
        LookupError::Ambiguous => ApiError::new(
            fleetdesk_kernel::ErrorCode::AmbiguousCode,
            format!("{code} is a legacy code on several platforms; add the platform parameter"),
        )
        .with_field("platform"),
        LookupError::NotYours => {
            ApiError::forbidden(format!("account {code} belongs to another agent's persona"))
        }
    }
}

/// An Agent API tool's operation with the usual settings (see [`OpSpec::tool`]).
pub fn agent_tool(
    method: HttpMethod,
    path: &'static str,
    scope: Scope,
    tool: &'static str,
    idempotent: bool,
    summary: &'static str,
    description: &'static str,
) -> OpSpec {
    OpSpec::tool(
        Api::Agent,
        method,
        path,
        Access::Agent(scope),
        tool,
        idempotent,
        summary,
        description,
    )
}
