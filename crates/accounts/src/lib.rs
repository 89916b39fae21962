//! Accounts: code slots and their generations, account states, avatars, heartbeats and the
//! accounts part of the agent's day.
//!
//! An account *slot* is the code (`TW-T001` on threads) with its persona, market and target;
//! a *generation* is one live account behind that code. A ban does not open a new generation:
//! it opens a pending decision that a person answers.

pub mod models;
pub mod ports;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;

pub use models::add::{check_existing, check_persona};
pub use models::avatar::{AvatarError, AvatarImage, ImageKind};
pub use models::decision::{
    BAN_DECISION_KIND, BAN_OPTIONS, BanDecision, answers_with_open_decision, ban_decision,
};
pub use models::generation::{LiveGeneration, Replacement, replace_banned};
pub use models::heartbeat::{HeartbeatError, HeartbeatInput};
pub use models::lookup::{Candidate, SlotName, answers_to, choose, pick};
pub use models::publishing::Publishing;
pub use models::state::{AccountState, AccountSubject, ReportedState, StateMove, apply_report};
pub use models::work::{DayCount, MarketDate, RotationAccount, WorkAccounts, work_accounts};
