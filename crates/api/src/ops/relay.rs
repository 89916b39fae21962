//! Decisions an agent relays for a person: who the person is, where the instruction came from
//! and when the person decided. Every relay body carries `on_behalf_of`, `origin` and
//! `effective_at`; [`RelayRecord`] is what is stored with the decision.

use super::common::{AgentBrief, PersonNameInput};
use crate::error::ApiError;
use crate::fields::{Text, Utc};
use fleetdesk_tenancy::AgentCaller;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;
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

/// The record stored with a relayed decision: the agent that relayed it, the person, the
/// instruction's origin and when the person decided.
#[derive(Debug, Serialize)]
pub struct RelayRecord<'a> {
    pub agent: AgentBrief,
    pub on_behalf_of: &'a OnBehalfOf,
    pub origin: &'a Origin,
    pub effective_at: Option<Utc>,
}

/// A body that relays a person's decision: it has the fields `on_behalf_of: OnBehalfOf`,
/// `origin: Origin` and `effective_at: Option<IsoTimeInput>` (see [`relay_body!`]).
pub trait RelayBody {
    fn on_behalf_of(&self) -> &OnBehalfOf;
    fn origin(&self) -> &Origin;
    fn effective_at(&self) -> Option<Timestamp>;
}

/// Implements [`RelayBody`] for body types with the three relay fields.
macro_rules! relay_body {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::ops::relay::RelayBody for $ty {
            fn on_behalf_of(&self) -> &$crate::ops::relay::OnBehalfOf {
                &self.on_behalf_of
            }

            fn origin(&self) -> &$crate::ops::relay::Origin {
                &self.origin
            }

            fn effective_at(&self) -> Option<jiff::Timestamp> {
                self.effective_at.as_ref().map(|t| t.0)
            }
        }
    )*};
}
pub(crate) use relay_body;

impl<'a> RelayRecord<'a> {
    /// The record of the decision `body` relays, relayed by `agent`.
    pub fn of(agent: &AgentCaller, body: &'a impl RelayBody) -> RelayRecord<'a> {
        RelayRecord {
            agent: agent.into(),
            on_behalf_of: body.on_behalf_of(),
            origin: body.origin(),
            effective_at: body.effective_at().map(Utc),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl OnBehalfOf {
    /// Refuses a person who is the relaying agent itself: an agent relays only what a person
    /// decided.
    pub fn check_not(&self, agent: &AgentCaller) -> Result<(), ApiError> {
        if self
            .name
            .0
            .trim()
            .eq_ignore_ascii_case(agent.agent_name.trim())
        {
            return Err(ApiError::rejected(
                "on_behalf_of names this agent: relay only what a person decided",
            )
            .with_field("on_behalf_of.name"));
        }
        Ok(())
    }
}
