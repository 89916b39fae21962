//! What every relay body carries: the person a decision is made for (`on_behalf_of`) and
//! where the instruction came from (`origin`).

use super::fields::Text;
use super::strings::PersonNameInput;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use validator::Validate;

/// Where a relayed or reported instruction came from.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub platform: OriginPlatform,
    pub gateway: Option<Text<0, 200>>,
    pub channel: Option<Text<0, 200>>,
    pub thread: Option<Text<0, 200>>,
    pub requester: Option<Text<0, 80>>,
    pub message_ref: Option<Text<0, 200>>,
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

/// The person a relayed decision is made for.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OnBehalfOf {
    pub name: PersonNameInput,
    pub role: OnBehalfRoleIn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnBehalfRoleIn {
    Agency,
    Client,
    Admin,
}

/// `on_behalf_of` where only agency people and admins decide (relay_issue, relay_task,
/// ad_research_approve, delete_stocked_post): role agency or admin. A client named there is
/// refused with the status the specification gives that relay (422, or 403 for deleting
/// stock), and over MCP as invalid params ([`OnBehalfOf::staff_only`]).
// The text above is the published schema description as it always read; the API crate's
// `StaffOnly` trait gives `staff_only`, which rustdoc cannot see from here.
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StaffOnBehalfOf {
    pub name: PersonNameInput,
    pub role: StaffRoleIn,
}

/// The roles of the people who decide where clients never do.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StaffRoleIn {
    Agency,
    Admin,
}

impl OnBehalfRoleIn {
    pub fn as_str(self) -> &'static str {
        match self {
            OnBehalfRoleIn::Agency => "agency",
            OnBehalfRoleIn::Client => "client",
            OnBehalfRoleIn::Admin => "admin",
        }
    }
}

/// Who asked: `origin.requester` when it names someone, else the caller's own name.
pub fn requester(origin: Option<&Origin>, caller: &str) -> String {
    origin
        .and_then(|o| o.requester.as_ref())
        .map(|r| r.0.trim().to_owned())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| caller.to_owned())
}
