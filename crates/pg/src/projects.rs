//! A project a request names that is not one of the caller's workspace: whether another
//! workspace of the organization has one of that name (`fleetdesk_kernel::project`).

use diesel_async::{AsyncPgConnection, RunQueryDsl};
use fleetdesk_kernel::project::ProjectMiss;
use uuid::Uuid;

/// Whether a workspace of organization `$1` has a project named `$2`.
const ELSEWHERE: &str = r#"
SELECT EXISTS (
    SELECT 1 FROM projects p JOIN workspaces w ON w.id = p.workspace_id
    WHERE w.organization_id = $1 AND p.name = $2
) AS elsewhere
"#;

row! {
    struct Elsewhere {
        elsewhere: bool,
    }
}

/// Why `name`, not a project of the caller's workspace, is refused: read only on that path.
pub(crate) async fn miss(
    conn: &mut AsyncPgConnection,
    organization_id: Uuid,
    name: &str,
) -> diesel::QueryResult<ProjectMiss> {
    let row: Elsewhere = sql!(ELSEWHERE, organization_id, name)
        .get_result(conn)
        .await?;
    Ok(ProjectMiss::of(row.elsewhere))
}

statements!(ELSEWHERE => Elsewhere);
