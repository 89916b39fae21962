//! A project a request names by its name, when it is not one of the caller's workspace.
//!
//! docs/decisions.md: an object a body or query names that does not exist is 404; the
//! specification's decisions make a project of another workspace of the organization named in
//! a write (create_persona, propose_wiki, create_upload) 422 rejected. A filter (the `project`
//! of a list or search) answers 404 either way: another workspace's objects are not there for
//! the caller.

/// Why a named project is not one of the caller's workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectMiss {
    /// Another workspace of the organization has a project of that name: 422 for a write.
    OtherWorkspace,
    /// No workspace of the organization has one: 404.
    Unknown,
}

impl ProjectMiss {
    /// The miss, from whether another workspace of the organization has a project of the name.
    pub fn of(elsewhere: bool) -> ProjectMiss {
        if elsewhere {
            ProjectMiss::OtherWorkspace
        } else {
            ProjectMiss::Unknown
        }
    }

    /// How a write answers the miss: 404 for a project that does not exist, 422 otherwise.
    pub fn is_not_found(self) -> bool {
        self == ProjectMiss::Unknown
    }

    /// The reason, naming the project.
    pub fn message(self, name: &str) -> String {
        match self {
            ProjectMiss::OtherWorkspace => {
                format!("project {name:?} belongs to another workspace, not to yours")
            }
            ProjectMiss::Unknown => format!("no project {name:?} in your organization"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_nowhere_is_not_found_and_one_of_another_workspace_is_refused() {
        assert_eq!(ProjectMiss::of(false), ProjectMiss::Unknown);
        assert!(ProjectMiss::of(false).is_not_found());
        assert_eq!(ProjectMiss::of(true), ProjectMiss::OtherWorkspace);
        assert!(!ProjectMiss::of(true).is_not_found());
        assert!(ProjectMiss::Unknown.message("cars").contains("\"cars\""));
    }
}
