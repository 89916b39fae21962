//! Task cards: work for an agent, opened by a person, an agent or a decision's follow-up, and
//! confirmed by a person.
//!
//! The vocabulary (kinds, statuses, targets), the move planner and the flags (`rules.rs`), and
//! the `TasksRepo` port (`ports.rs`).

pub mod plan;
pub mod ports;
pub mod rules;
pub mod service;
#[cfg(feature = "wire")]
pub mod wire;

use serde::{Deserialize, Serialize};

fleetdesk_kernel::text_enum! {
    /// What a card asks for.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum TaskKind {
        WritePosts => "write_posts",
        ChangeAvatar => "change_avatar",
        ChangeBio => "change_bio",
        DeletePost => "delete_post",
        PauseAccount => "pause_account",
        ResumeAccount => "resume_account",
        ExportData => "export_data",
        Other => "other",
    }
}

fleetdesk_kernel::text_enum! {
    /// Where a card stands: picked up, worked, waiting for a person's confirmation, and how it
    /// ended.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum TaskStatus {
        PendingPickup => "pending_pickup",
        InProgress => "in_progress",
        PendingConfirmation => "pending_confirmation",
        Done => "done",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

impl TaskStatus {
    /// The statuses a card is still open in: `GET /tasks` lists these by default.
    pub const OPEN: [TaskStatus; 3] = [
        TaskStatus::PendingPickup,
        TaskStatus::InProgress,
        TaskStatus::PendingConfirmation,
    ];

    /// [`OPEN`](Self::OPEN) as stored, for SQL (`status = ANY($n)`).
    pub fn open_texts() -> Vec<&'static str> {
        TaskStatus::OPEN.map(TaskStatus::as_str).to_vec()
    }
}

fleetdesk_kernel::text_enum! {
    /// What a card is about: an account (by code), a persona (by code), a post or a decision
    /// (by id).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
    #[serde(rename_all = "snake_case")]
    pub enum TargetType {
        Slot => "slot",
        Persona => "persona",
        Post => "post",
        Issue => "issue",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_statuses_are_stored_as_their_texts() {
        assert_eq!(
            TaskStatus::open_texts(),
            ["pending_pickup", "in_progress", "pending_confirmation"]
        );
    }
}
