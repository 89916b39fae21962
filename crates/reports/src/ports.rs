//! Who sees which report, and what the report use cases need from storage.

use crate::period::Period;
use crate::report::ReportBody;
use fleetdesk_kernel::jobs::Job;
use fleetdesk_kernel::{BoxFuture, Page, Position};
use jiff::Timestamp;
use uuid::Uuid;

/// Who reads reports. Agency people read every report of their organization, issued or not;
/// clients only the issued ones of their organization; a platform admin outside any
/// organization every organization's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    /// `None`: a platform admin outside any organization.
    Agency(Option<Uuid>),
    Client(Uuid),
}

impl Viewer {
    /// The organization the viewer is limited to (`None`: every one).
    pub fn organization(self) -> Option<Uuid> {
        match self {
            Viewer::Agency(org) => org,
            Viewer::Client(org) => Some(org),
        }
    }

    /// Whether the viewer sees only issued reports.
    pub fn issued_only(self) -> bool {
        matches!(self, Viewer::Client(_))
    }

    /// Whether the viewer may see a report of `organization`, issued or not.
    pub fn may_see(self, organization: Uuid, issued: bool) -> bool {
        self.organization().is_none_or(|o| o == organization) && (issued || !self.issued_only())
    }
}

/// A workspace as a request names it: by id, or by name within the organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceRef {
    Id(Uuid),
    Name(String),
}

impl WorkspaceRef {
    /// A uuid is an id; anything else a name.
    pub fn parse(raw: &str) -> WorkspaceRef {
        let raw = raw.trim();
        match Uuid::parse_str(raw) {
            Ok(id) => WorkspaceRef::Id(id),
            Err(_) => WorkspaceRef::Name(raw.to_owned()),
        }
    }
}

/// A report as the list shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportSummary {
    pub id: Uuid,
    pub organization_id: Uuid,
    pub title: String,
    pub workspace: (Uuid, String),
    pub period: Period,
    pub weekly: bool,
    pub issued_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

/// A report with what it says.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRecord {
    pub summary: ReportSummary,
    pub body: ReportBody,
}

/// A report a person asks for now.
#[derive(Debug, Clone, PartialEq)]
pub struct NewReport {
    pub workspace: WorkspaceRef,
    pub period: Period,
    pub title: Option<String>,
    /// The person's name.
    pub created_by: String,
}

/// Why a report cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CreateRefusal {
    /// 404 naming `workspace`: no such workspace in the caller's reach.
    #[error("no workspace {0} in your organization")]
    UnknownWorkspace(String),
    /// 422 naming `workspace`: a name several organizations use (a platform admin outside any).
    #[error("several organizations have a workspace named {0}: name it by id")]
    AmbiguousWorkspace(String),
}

impl CreateRefusal {
    /// A workspace that is not there is 404, like any object a body names.
    pub fn is_not_found(&self) -> bool {
        matches!(self, CreateRefusal::UnknownWorkspace(_))
    }
}

/// The outcome of issuing: the report afterwards, and whether it was issued already.
#[derive(Debug, Clone, PartialEq)]
pub struct Issued {
    pub report: ReportRecord,
    pub unchanged: bool,
}

/// Reports in storage.
pub trait ReportsRepo: Send + Sync {
    /// The reports `viewer` sees, newest first (by creation), after `after`.
    fn list(
        &self,
        viewer: Viewer,
        after: Option<Position>,
        limit: i64,
    ) -> BoxFuture<'_, anyhow::Result<Page<ReportSummary>>>;

    /// Report `id` when `viewer` sees it.
    fn get(&self, viewer: Viewer, id: Uuid) -> BoxFuture<'_, anyhow::Result<Option<ReportRecord>>>;

    /// Builds a report now from what was reported, in a workspace of `viewer`'s organization.
    fn create<'a>(
        &'a self,
        viewer: Viewer,
        request: &'a NewReport,
    ) -> BoxFuture<'a, anyhow::Result<Result<ReportRecord, CreateRefusal>>>;

    /// Issues report `id` to the clients (`None`: `viewer` does not see it).
    fn issue<'a>(
        &'a self,
        viewer: Viewer,
        id: Uuid,
        by: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<Option<Issued>>>;

    /// The Monday build of `job`: one weekly report of `period` per workspace that has none
    /// yet, and `job` done, in one transaction. `None` when the job's lease was lost (nothing
    /// is written; the instance holding it now builds them); else how many reports were built.
    fn build_weekly<'a>(
        &'a self,
        job: &'a Job,
        period: Period,
    ) -> BoxFuture<'a, anyhow::Result<Option<usize>>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_see_only_issued_reports_of_their_organization() {
        let (mine, other) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let client = Viewer::Client(mine);
        assert!(client.may_see(mine, true));
        assert!(!client.may_see(mine, false));
        assert!(!client.may_see(other, true));
        let agency = Viewer::Agency(Some(mine));
        assert!(agency.may_see(mine, false));
        assert!(!agency.may_see(other, true));
        let admin = Viewer::Agency(None);
        assert!(admin.may_see(other, false));
        assert!(client.issued_only() && !agency.issued_only());
    }

    #[test]
    fn an_unknown_workspace_is_not_found_and_an_ambiguous_name_refused() {
        assert!(CreateRefusal::UnknownWorkspace("Mars".into()).is_not_found());
        assert!(!CreateRefusal::AmbiguousWorkspace("Taiwan".into()).is_not_found());
    }

    #[test]
    fn a_workspace_is_named_by_id_or_name() {
        let id = Uuid::from_u128(7);
        assert_eq!(WorkspaceRef::parse(&id.to_string()), WorkspaceRef::Id(id));
        assert_eq!(
            WorkspaceRef::parse(" Taiwan "),
            WorkspaceRef::Name("Taiwan".to_owned())
        );
    }
}
