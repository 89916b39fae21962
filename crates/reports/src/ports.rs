//! Who sees which report, and what the report use cases need from storage.

use crate::period::Period;
use crate::report::ReportBody;
use fleetdesk_kernel::events::{EventBody, NewEvent, ReportIssued};
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

impl Issued {
    /// `report.issued` for a report this request issued (none when it was issued already),
    /// about the report, told to no agent: people and webhooks only.
    pub fn event(&self) -> Option<NewEvent> {
        if self.unchanged {
            return None;
        }
        let summary = &self.report.summary;
        Some(NewEvent {
            workspace_id: summary.workspace.0,
            agent_id: None,
            object_id: summary.id,
            body: EventBody::ReportIssued(ReportIssued {
                period_from: summary.period.from().to_string(),
                period_to: summary.period.to().to_string(),
                title: summary.title.clone(),
            }),
        })
    }
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
    fn an_issue_tells_report_issued_once_to_no_agent() {
        let period =
            Period::new("2026-11-30".parse().unwrap(), "2026-12-06".parse().unwrap()).unwrap();
        let mut issued = Issued {
            report: ReportRecord {
                summary: ReportSummary {
                    id: Uuid::from_u128(1),
                    organization_id: Uuid::from_u128(2),
                    title: "Week 49".into(),
                    workspace: (Uuid::from_u128(3), "Taiwan".into()),
                    period,
                    weekly: true,
                    issued_at: Some("2026-12-07T01:00:00Z".parse().unwrap()),
                    created_at: "2026-12-07T00:00:00Z".parse().unwrap(),
                },
                body: ReportBody::default(),
            },
            unchanged: false,
        };
        let event = issued.event().expect("issued now");
        assert_eq!(
            (event.workspace_id, event.agent_id, event.object_id),
            (Uuid::from_u128(3), None, Uuid::from_u128(1))
        );
        assert_eq!(
            event.body,
            EventBody::ReportIssued(ReportIssued {
                period_from: "2026-11-30".into(),
                period_to: "2026-12-06".into(),
                title: "Week 49".into(),
            })
        );
        issued.unchanged = true;
        assert_eq!(issued.event(), None, "issued before: nothing to tell");
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
