//! A self-managed local PostgreSQL cluster for `fleetdesk serve` when no `DATABASE_URL` is set.
//!
//! [`ensure_local_postgres`] initializes (once), starts (when stopped) or reuses a PostgreSQL
//! cluster living under `<data_dir>/postgres`, using the PostgreSQL server binaries installed on
//! the machine, and returns a connection URL for the `fleetdesk` database.
//!
//! Layout (all under `<data_dir>/postgres`, mode 0700):
//!
//! * `data/` — the cluster (`PGDATA`), created by `initdb`.
//! * `run/` — the Unix socket directory (or `/tmp/fleetdesk-pg-<hash>` when `run/` would make the
//!   socket path longer than the ~107 byte `sun_path` limit).
//! * `postgres.log` — the server log (`pg_ctl -l`); it is appended to and never rotated.
//! * `fleetdesk.lock` — an advisory lock serializing concurrent `ensure_local_postgres` calls.
//!
//! The cluster listens only on a Unix socket (`listen_addresses = ''`), so the port
//! ([`LOCAL_PG_PORT`]) is only part of the socket file name and never clashes with a system
//! PostgreSQL listening on TCP. Local connections use `trust` authentication; access is
//! restricted by the socket permissions (`unix_socket_permissions = 0700`, socket directory mode
//! 0700): only the cluster owner and root can connect.
//!
//! When running as root (initdb and postgres refuse to run as root) the cluster is owned by, and
//! the server runs as, the `postgres` system user: `initdb`/`pg_ctl` are run through
//! `runuser -u postgres --` (or `su postgres -s /bin/sh -c` when `runuser` is missing). That user
//! needs search (`x`) permission on every parent directory of the data dir.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::fs::TryLockError;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use tokio::process::Command;

/// Port of the local cluster. The cluster does not listen on TCP, so this only names the socket
/// file (`<socket_dir>/.s.PGSQL.5432`).
pub const LOCAL_PG_PORT: u16 = 5432;
/// Database created in the local cluster and targeted by [`LocalPostgres::url`].
pub const LOCAL_PG_DATABASE: &str = "fleetdesk";
/// Database superuser created by `initdb -U`.
pub const LOCAL_PG_USER: &str = "postgres";

/// OS user owning the cluster when fleetdesk runs as root.
const OS_PG_USER: &str = "postgres";
/// Longest socket path we accept: `sun_path` is 108 bytes on Linux and 104 on macOS/BSD, both
/// including the terminating NUL.
const MAX_SOCKET_PATH_LEN: usize = 103;
/// How long to wait for another process holding `fleetdesk.lock` (it may be running initdb).
const LOCK_TIMEOUT: Duration = Duration::from_secs(300);
/// `pg_ctl -t`: seconds to wait for the server to start (crash recovery may take a while).
const START_TIMEOUT_SECS: u32 = 300;

/// What [`ensure_local_postgres`] had to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalPostgresAction {
    /// The cluster did not exist: it was created with `initdb`, then started.
    Initialized,
    /// The cluster existed but was not running: it was started.
    Started,
    /// The cluster was already running.
    Reused,
}

/// A running local PostgreSQL cluster, as returned by [`ensure_local_postgres`].
#[derive(Debug, Clone)]
pub struct LocalPostgres {
    /// Connection URL for the `fleetdesk` database, e.g.
    /// `postgres://postgres@%2Fsrv%2Ffleetdesk%2Fpostgres%2Frun:5432/fleetdesk`.
    ///
    /// The Unix socket directory is the percent-encoded host, which both tokio-postgres (hence
    /// diesel-async) and libpq (`psql`) read as a socket directory because it starts with `/`.
    pub url: String,
    /// The cluster directory (`PGDATA`).
    pub pgdata: PathBuf,
    /// Directory holding the server's Unix socket.
    pub socket_dir: PathBuf,
    /// Port, i.e. the socket file is `<socket_dir>/.s.PGSQL.<port>`.
    pub port: u16,
    /// Server log file (`pg_ctl -l`).
    pub log_file: PathBuf,
    /// Directory of the PostgreSQL binaries in use (`initdb`, `pg_ctl`, `postgres`, ...).
    pub bin_dir: PathBuf,
    /// What had to be done to get the cluster running.
    pub action: LocalPostgresAction,
    runner: Runner,
    psql: PathBuf,
}

impl LocalPostgres {
    /// Stops the cluster (`pg_ctl stop -m fast`). `fleetdesk serve` does not call this: the
    /// cluster is meant to outlive it.
    pub async fn stop(&self) -> Result<()> {
        stop_server(&self.bin_dir.join("pg_ctl"), &self.pgdata, &self.runner).await?;
        tracing::info!(pgdata = %self.pgdata.display(), "stopped local PostgreSQL cluster");
        Ok(())
    }

    /// The connection URL of another database of the cluster (`postgres`, say).
    pub fn url_of(&self, database: &str) -> String {
        connection_url(&self.socket_dir, self.port, database)
    }

    /// Runs `sql` with `psql` in `database` as the superuser and returns what it printed, one
    /// row a line, columns separated by `|` (`psql -tA`). Fails with psql's error.
    pub async fn psql(&self, database: &str, sql: &str) -> Result<String> {
        let port = self.port.to_string();
        let args = [
            "-X",
            "-q",
            "-tA",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            path_str(&self.socket_dir)?,
            "-p",
            &port,
            "-U",
            LOCAL_PG_USER,
            "-d",
            database,
            "-c",
            sql,
        ];
        let out = exec(plain_command(&self.psql, &args)).await?;
        if !out.success {
            bail!("{}", out.failure("psql failed"));
        }
        Ok(out.stdout)
    }
}

/// Makes sure a PostgreSQL cluster under `data_dir/postgres` runs, and returns a connection URL
/// (tokio-postgres / diesel-async compatible) for database `fleetdesk` (created when missing).
///
/// * Missing cluster: `initdb` (trust auth, superuser `postgres`, UTF-8, `C.UTF-8` locale or `C`
///   when unavailable, data checksums), then start.
/// * Stopped cluster (including a stale `postmaster.pid` left by a crash): `pg_ctl start`.
/// * Running cluster: reused as is (its socket directory and port are read from
///   `postmaster.pid`).
///
/// The server is started detached (`pg_ctl start`, which puts it in its own session) and **keeps
/// running after fleetdesk exits**: it is the user's local database, shared by later
/// `fleetdesk serve` runs, which reuse it. Stop it with
/// `pg_ctl -D <data_dir>/postgres/data stop` (as the `postgres` user when fleetdesk ran as root)
/// or [`LocalPostgres::stop`]. Note that a service manager killing the whole process group or
/// cgroup of fleetdesk (e.g. systemd's default `KillMode=control-group`, or a container stopping)
/// also stops the server; PostgreSQL then performs crash recovery on the next start, which is
/// safe.
///
/// Binaries are looked up in `PATH` (`initdb`, `pg_ctl`), then `pg_config --bindir`, then the
/// usual package locations (`/usr/lib/postgresql/*/bin`, highest version first, ...). For an
/// existing cluster, binaries of the cluster's major version (`PG_VERSION`) are required.
///
/// Concurrent calls (from several processes or tasks) are serialized with an advisory lock on
/// `data_dir/postgres/fleetdesk.lock`.
pub async fn ensure_local_postgres(data_dir: &Path) -> Result<LocalPostgres> {
    ensure_local_postgres_with(data_dir, &[]).await
}

/// [`ensure_local_postgres`] for a cluster with settings of its own, each `(name, value)`
/// passed to the server at start (`-c name=value`; the value as `SHOW name` prints it, e.g.
/// `("max_connections", "400")`, `("fsync", "off")`). A running cluster whose settings differ
/// is restarted with them (`action` is then `Started`). The tests' cluster uses this.
pub async fn ensure_local_postgres_with(
    data_dir: &Path,
    settings: &[(&str, &str)],
) -> Result<LocalPostgres> {
    let began = Instant::now();
    let layout = Layout::prepare(data_dir).await?;
    let _lock = acquire_lock(&layout.lock_file).await?;
    let runner = Runner::detect().await?;
    if let Runner::AsPostgres { uid, .. } = &runner {
        chown_to_postgres(&layout.root, *uid, false).await?;
    }

    let existing_version = match tokio::fs::read_to_string(layout.pgdata.join("PG_VERSION")).await {
        Ok(v) => Some(v.trim().to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(e).with_context(|| {
                format!(
                    "could not read {}",
                    layout.pgdata.join("PG_VERSION").display()
                )
            });
        }
    };
    if existing_version.is_none() && tokio::fs::symlink_metadata(&layout.pgdata).await.is_ok() {
        bail!(
            "{} exists but is not a PostgreSQL cluster (no PG_VERSION file); move it away or \
             delete it so that a new cluster can be created",
            layout.pgdata.display()
        );
    }
    let bins = PgBins::find(existing_version.as_deref()).await?;

    let (action, socket_dir, port, exists) = if existing_version.is_none() {
        init_cluster(&bins, &layout, &runner).await?;
        start_cluster(&bins, &layout, &runner, settings).await?;
        let exists = database_exists(&bins, &layout, &layout.socket_dir, LOCAL_PG_PORT).await?;
        let action = LocalPostgresAction::Initialized;
        (action, layout.socket_dir.clone(), LOCAL_PG_PORT, exists)
    } else {
        if let Runner::AsPostgres { uid, .. } = &runner {
            chown_to_postgres(&layout.pgdata, *uid, true).await?;
        }
        // A server that pg_ctl reports as running may not accept connections yet (starting up)
        // or any more (its postmaster.pid names a dead process that is not reaped yet, or a
        // reused PID): retry for a while, re-checking the status.
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if !cluster_is_running(&bins, &layout, &runner).await? {
                start_cluster(&bins, &layout, &runner, settings).await?;
                let exists =
                    database_exists(&bins, &layout, &layout.socket_dir, LOCAL_PG_PORT).await?;
                let action = LocalPostgresAction::Started;
                break (action, layout.socket_dir.clone(), LOCAL_PG_PORT, exists);
            }
            let attempt = match running_socket(&layout).await {
                Ok((socket_dir, port)) => database_exists(&bins, &layout, &socket_dir, port)
                    .await
                    .map(|exists| (socket_dir, port, exists)),
                Err(e) => Err(e),
            };
            match attempt {
                Ok((socket_dir, port, exists)) => {
                    break (LocalPostgresAction::Reused, socket_dir, port, exists);
                }
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        }
    };
    let (action, socket_dir, port) = if action == LocalPostgresAction::Reused
        && !settings_hold(&bins, &layout, &socket_dir, port, settings).await?
    {
        tracing::info!("restarting the local PostgreSQL cluster with other settings");
        stop_server(&bins.pg_ctl, &layout.pgdata, &runner).await?;
        start_cluster(&bins, &layout, &runner, settings).await?;
        let socket_dir = layout.socket_dir.clone();
        (LocalPostgresAction::Started, socket_dir, LOCAL_PG_PORT)
    } else {
        (action, socket_dir, port)
    };
    let created = !exists && create_database(&bins, &layout, &socket_dir, port).await?;

    let pg = LocalPostgres {
        url: connection_url(&socket_dir, port, LOCAL_PG_DATABASE),
        pgdata: layout.pgdata.clone(),
        socket_dir,
        port,
        log_file: layout.log_file.clone(),
        bin_dir: bins.dir.clone(),
        action,
        runner,
        psql: bins.psql.clone(),
    };
    let what = match action {
        LocalPostgresAction::Initialized => {
            "initialized and started a new local PostgreSQL cluster"
        }
        LocalPostgresAction::Started => "started the local PostgreSQL cluster",
        LocalPostgresAction::Reused => "reusing the running local PostgreSQL cluster",
    };
    tracing::info!(
        pgdata = %pg.pgdata.display(),
        socket_dir = %pg.socket_dir.display(),
        port = pg.port,
        log_file = %pg.log_file.display(),
        bin_dir = %pg.bin_dir.display(),
        database_created = created,
        elapsed_ms = began.elapsed().as_millis() as u64,
        "{what}; it keeps running after fleetdesk exits (server log: {})",
        pg.log_file.display()
    );
    Ok(pg)
}

// ---------------------------------------------------------------------------------------------
// Layout and locking

struct Layout {
    /// `<data_dir>/postgres`, canonical.
    root: PathBuf,
    /// `PGDATA`.
    pgdata: PathBuf,
    /// Where initdb builds a new cluster before it is renamed to `pgdata`.
    pgdata_tmp: PathBuf,
    log_file: PathBuf,
    lock_file: PathBuf,
    /// Socket directory for a server we start.
    socket_dir: PathBuf,
}

impl Layout {
    async fn prepare(data_dir: &Path) -> Result<Layout> {
        let data_dir = std::path::absolute(data_dir)
            .with_context(|| format!("invalid data dir {}", data_dir.display()))?;
        tokio::fs::create_dir_all(&data_dir)
            .await
            .with_context(|| format!("could not create data dir {}", data_dir.display()))?;
        let root = data_dir.join("postgres");
        create_private_dir(&root).await?;
        let root = tokio::fs::canonicalize(&root)
            .await
            .with_context(|| format!("could not resolve {}", root.display()))?;
        let root_str = path_str(&root)?;
        // pg_ctl puts paths between double quotes in a /bin/sh command line.
        if let Some(c) = root_str
            .chars()
            .find(|c| matches!(c, '"' | '$' | '`' | '\\' | '\n'))
        {
            bail!(
                "the data dir path {} contains {c:?}, which pg_ctl cannot handle; choose another \
                 data dir",
                root.display()
            );
        }
        let socket_dir = socket_dir_for(&root, LOCAL_PG_PORT);
        Ok(Layout {
            pgdata: root.join("data"),
            pgdata_tmp: root.join("data.initdb-tmp"),
            log_file: root.join("postgres.log"),
            lock_file: root.join("fleetdesk.lock"),
            socket_dir,
            root,
        })
    }
}

/// `<root>/run`, or `/tmp/fleetdesk-pg-<hash of root>` when the socket path would be too long (or
/// the path contains characters that need quoting in `unix_socket_directories`).
fn socket_dir_for(root: &Path, port: u16) -> PathBuf {
    let preferred = root.join("run");
    let socket_path_len = preferred.as_os_str().len() + format!("/.s.PGSQL.{port}").len();
    let plain = preferred
        .as_os_str()
        .as_bytes()
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+@".contains(b));
    if socket_path_len <= MAX_SOCKET_PATH_LEN && plain {
        preferred
    } else {
        PathBuf::from(format!(
            "/tmp/fleetdesk-pg-{:016x}",
            fnv1a64(root.as_os_str().as_bytes())
        ))
    }
}

/// FNV-1a, 64 bits: a hash that is stable across builds (unlike `DefaultHasher`).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Creates `dir` with mode 0700 when missing (existing directories are left as they are).
async fn create_private_dir(dir: &Path) -> Result<()> {
    match tokio::fs::DirBuilder::new().mode(0o700).create(dir).await {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = tokio::fs::metadata(dir).await?;
            if !meta.is_dir() {
                bail!("{} exists and is not a directory", dir.display());
            }
            Ok(())
        }
        Err(e) => Err(e).with_context(|| format!("could not create {}", dir.display())),
    }
}

async fn acquire_lock(path: &Path) -> Result<std::fs::File> {
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .await
        .with_context(|| format!("could not open lock file {}", path.display()))?
        .into_std()
        .await;
    let deadline = Instant::now() + LOCK_TIMEOUT;
    let mut announced = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) => {
                if !announced {
                    announced = true;
                    tracing::info!(
                        lock_file = %path.display(),
                        "waiting for another process setting up the local PostgreSQL cluster"
                    );
                }
                if Instant::now() >= deadline {
                    bail!(
                        "timed out after {}s waiting for the lock {} (held by another process \
                         setting up the local PostgreSQL cluster)",
                        LOCK_TIMEOUT.as_secs(),
                        path.display()
                    );
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("could not lock {}", path.display()));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Running commands, possibly as the postgres user

#[derive(Debug, Clone)]
enum Runner {
    /// Not root: run everything as the current user (`uid`).
    CurrentUser { uid: u32 },
    /// Root: run initdb/pg_ctl as the `postgres` user.
    AsPostgres { uid: u32, switch: SwitchUser },
}

#[derive(Debug, Clone)]
enum SwitchUser {
    Runuser(PathBuf),
    Su(PathBuf),
}

impl Runner {
    async fn detect() -> Result<Runner> {
        let euid = exec_ok(
            plain_command(Path::new("id"), &["-u"]),
            "could not run `id -u`",
        )
        .await?
        .stdout
        .trim()
        .parse::<u32>()
        .context("unexpected output from `id -u`")?;
        if euid != 0 {
            return Ok(Runner::CurrentUser { uid: euid });
        }
        let out = exec(plain_command(Path::new("id"), &["-u", OS_PG_USER])).await?;
        if !out.success {
            bail!(
                "fleetdesk runs as root, and PostgreSQL refuses to run as root, but there is no \
                 `{OS_PG_USER}` system user to run it as (`id -u {OS_PG_USER}` failed: {}); \
                 create that user or run fleetdesk as a regular user",
                out.stderr.trim()
            );
        }
        let uid = out
            .stdout
            .trim()
            .parse::<u32>()
            .context("unexpected output from `id -u postgres`")?;
        let switch = if let Some(runuser) =
            find_program("runuser", &["/usr/sbin/runuser", "/sbin/runuser"])
        {
            SwitchUser::Runuser(runuser)
        } else if let Some(su) = find_program("su", &["/bin/su", "/usr/bin/su"]) {
            SwitchUser::Su(su)
        } else {
            bail!(
                "fleetdesk runs as root and must run PostgreSQL as the `{OS_PG_USER}` user, but \
                 neither `runuser` nor `su` was found (searched PATH, /usr/sbin, /sbin, /bin, \
                 /usr/bin)"
            );
        };
        Ok(Runner::AsPostgres { uid, switch })
    }

    /// A command running `program args` as the cluster owner, in `cwd`.
    fn command(&self, program: &Path, args: &[String], cwd: &Path) -> Command {
        let mut cmd = match self {
            Runner::CurrentUser { .. } => {
                let mut cmd = Command::new(program);
                cmd.args(args);
                cmd
            }
            Runner::AsPostgres {
                switch: SwitchUser::Runuser(runuser),
                ..
            } => {
                let mut cmd = Command::new(runuser);
                cmd.args(["-u", OS_PG_USER, "--"]).arg(program).args(args);
                cmd
            }
            Runner::AsPostgres {
                switch: SwitchUser::Su(su),
                ..
            } => {
                let mut line = format!("exec {}", sh_quote(&program.to_string_lossy()));
                for arg in args {
                    line.push(' ');
                    line.push_str(&sh_quote(arg));
                }
                let mut cmd = Command::new(su);
                cmd.args([OS_PG_USER, "-s", "/bin/sh", "-c", &line]);
                cmd
            }
        };
        sanitize(&mut cmd);
        // The postgres user may not be allowed into the caller's working directory.
        cmd.current_dir(cwd);
        cmd
    }
}

/// A command run as the current user.
fn plain_command(program: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args);
    sanitize(&mut cmd);
    cmd
}

/// Removes libpq/PostgreSQL environment variables that could redirect or alter our commands.
fn sanitize(cmd: &mut Command) {
    for var in [
        "PGHOST",
        "PGHOSTADDR",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGSERVICE",
        "PGSERVICEFILE",
        "PGOPTIONS",
        "PGDATA",
        "PGSSLMODE",
        "PGREQUIRESSL",
        "PGTARGETSESSIONATTRS",
        "PGCLIENTENCODING",
        "PGTZ",
        "PGDATESTYLE",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("PGCONNECT_TIMEOUT", "10");
    cmd.stdin(Stdio::null());
}

struct Output {
    command: String,
    success: bool,
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

impl Output {
    fn failure(&self, what: &str) -> String {
        let mut msg = format!("{what}: `{}` failed ({})", self.command, self.status);
        for (name, text) in [("stderr", &self.stderr), ("stdout", &self.stdout)] {
            let text = text.trim();
            if !text.is_empty() {
                let _ = write!(msg, "\n{name}:\n{}", tail(text, 4000));
            }
        }
        msg
    }
}

async fn exec(mut cmd: Command) -> Result<Output> {
    let std_cmd = cmd.as_std();
    let mut command = std_cmd.get_program().to_string_lossy().into_owned();
    for arg in std_cmd.get_args() {
        command.push(' ');
        command.push_str(&arg.to_string_lossy());
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = cmd
        .output()
        .await
        .with_context(|| format!("could not run `{command}`"))?;
    Ok(Output {
        command,
        success: out.status.success(),
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

async fn exec_ok(cmd: Command, what: &str) -> Result<Output> {
    let out = exec(cmd).await?;
    if !out.success {
        bail!("{}", out.failure(what));
    }
    Ok(out)
}

/// `chown postgres <path>` (recursively with `recursive`) unless `path` already belongs to `uid`.
async fn chown_to_postgres(path: &Path, uid: u32, recursive: bool) -> Result<()> {
    let meta = tokio::fs::metadata(path)
        .await
        .with_context(|| format!("could not stat {}", path.display()))?;
    if meta.uid() == uid {
        return Ok(());
    }
    if recursive {
        tracing::warn!(
            path = %path.display(),
            "local PostgreSQL cluster is not owned by the `{OS_PG_USER}` user; changing its owner"
        );
    }
    let chown = find_program("chown", &["/bin/chown", "/usr/bin/chown"])
        .unwrap_or_else(|| PathBuf::from("chown"));
    let target = path_str(path)?;
    let args: &[&str] = if recursive {
        &["-R", OS_PG_USER, target]
    } else {
        &[OS_PG_USER, target]
    };
    exec_ok(
        plain_command(&chown, args),
        &format!(
            "could not give {} to the `{OS_PG_USER}` user",
            path.display()
        ),
    )
    .await?;
    Ok(())
}

/// When running as root: a hint naming a parent directory the `postgres` user probably cannot
/// traverse (the most common reason for initdb/pg_ctl permission errors).
async fn access_hint(runner: &Runner, path: &Path) -> String {
    let Runner::AsPostgres { uid, .. } = runner else {
        return String::new();
    };
    for dir in path.ancestors().skip(1) {
        let Ok(meta) = tokio::fs::metadata(dir).await else {
            continue;
        };
        let mode = meta.permissions().mode();
        if meta.uid() != *uid && mode & 0o001 == 0 {
            return format!(
                "\nhint: the `{OS_PG_USER}` user probably cannot access {} (mode {:o}, owner uid \
                 {}); PostgreSQL runs as `{OS_PG_USER}` because fleetdesk runs as root, so every \
                 parent directory of the data dir must be searchable by it (e.g. `chmod o+x`), or \
                 use a data dir elsewhere",
                dir.display(),
                mode & 0o7777,
                meta.uid()
            );
        }
    }
    String::new()
}

// ---------------------------------------------------------------------------------------------
// Finding the binaries

struct PgBins {
    dir: PathBuf,
    initdb: PathBuf,
    pg_ctl: PathBuf,
    psql: PathBuf,
}

impl PgBins {
    /// Finds a directory holding `initdb`, `pg_ctl` and `postgres` (of major version `major`
    /// when given).
    async fn find(major: Option<&str>) -> Result<PgBins> {
        let mut searched: Vec<String> = Vec::new();
        let mut seen: Vec<PathBuf> = Vec::new();
        let mut wrong_version: Vec<String> = Vec::new();

        for source in 0..3 {
            let candidates = match source {
                0 => {
                    searched.push("PATH (initdb, pg_ctl)".to_owned());
                    let mut dirs = Vec::new();
                    for name in ["initdb", "pg_ctl"] {
                        if let Some(exe) = find_program(name, &[]) {
                            // Follow symlinks (e.g. /usr/local/bin/initdb -> .../15/bin/initdb).
                            let exe = tokio::fs::canonicalize(&exe).await.unwrap_or(exe);
                            if let Some(dir) = exe.parent() {
                                dirs.push(dir.to_path_buf());
                            }
                        }
                    }
                    dirs
                }
                1 => {
                    searched.push("`pg_config --bindir`".to_owned());
                    match find_program("pg_config", &[]) {
                        Some(pg_config) => {
                            match exec(plain_command(&pg_config, &["--bindir"])).await {
                                Ok(out) if out.success && !out.stdout.trim().is_empty() => {
                                    vec![PathBuf::from(out.stdout.trim())]
                                }
                                _ => Vec::new(),
                            }
                        }
                        None => Vec::new(),
                    }
                }
                _ => {
                    let mut dirs = Vec::new();
                    for (parent, prefix, suffix) in [
                        ("/usr/lib/postgresql", "", "bin"),
                        ("/usr", "pgsql-", "bin"),
                        ("/opt/homebrew/opt", "postgresql@", "bin"),
                        ("/usr/local/opt", "postgresql@", "bin"),
                    ] {
                        searched.push(format!("{parent}/{prefix}*/{suffix}"));
                        dirs.extend(versioned_dirs(parent, prefix, suffix).await);
                    }
                    searched.push("/usr/local/pgsql/bin".to_owned());
                    dirs.push(PathBuf::from("/usr/local/pgsql/bin"));
                    dirs
                }
            };
            for dir in candidates {
                let dir = tokio::fs::canonicalize(&dir).await.unwrap_or(dir);
                if seen.contains(&dir) {
                    continue;
                }
                seen.push(dir.clone());
                if !["initdb", "pg_ctl", "postgres"]
                    .iter()
                    .all(|b| is_executable(&dir.join(b)))
                {
                    continue;
                }
                if let Some(major) = major {
                    let version = server_major_version(&dir).await?;
                    if version != major {
                        wrong_version.push(format!("{} ({version})", dir.display()));
                        continue;
                    }
                }
                let psql = if is_executable(&dir.join("psql")) {
                    dir.join("psql")
                } else {
                    find_program("psql", &[]).ok_or_else(|| {
                        anyhow!(
                            "found the PostgreSQL server binaries in {}, but no `psql` there or \
                             in PATH; install the PostgreSQL client",
                            dir.display()
                        )
                    })?
                };
                return Ok(PgBins {
                    initdb: dir.join("initdb"),
                    pg_ctl: dir.join("pg_ctl"),
                    psql,
                    dir,
                });
            }
        }

        let searched = searched.join(", ");
        match major {
            Some(major) if !wrong_version.is_empty() => bail!(
                "the local PostgreSQL cluster was created by PostgreSQL {major}, but only other \
                 versions were found: {}; install PostgreSQL {major} (or upgrade the cluster with \
                 pg_upgrade). Searched: {searched}",
                wrong_version.join(", ")
            ),
            _ => bail!(
                "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found; searched: \
                 {searched}. Install the PostgreSQL server (e.g. `apt install postgresql`) or set \
                 DATABASE_URL to use an existing database"
            ),
        }
    }
}

/// `<parent>/<prefix><version>/<suffix>` directories, highest version first.
async fn versioned_dirs(parent: &str, prefix: &str, suffix: &str) -> Vec<PathBuf> {
    let Ok(mut entries) = tokio::fs::read_dir(parent).await else {
        return Vec::new();
    };
    let mut found: Vec<(Vec<u64>, PathBuf)> = Vec::new();
    while let Ok(Some(entry)) = entries.next_entry().await {
        let name = entry.file_name();
        let Some(version) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let key: Option<Vec<u64>> = version.split('.').map(|p| p.parse().ok()).collect();
        if let Some(key) = key {
            found.push((key, entry.path().join(suffix)));
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.into_iter().map(|(_, dir)| dir).collect()
}

/// Major version of `<dir>/postgres` ("15", or "9.6" for old versions), as in `PG_VERSION`.
async fn server_major_version(dir: &Path) -> Result<String> {
    let out = exec_ok(
        plain_command(&dir.join("postgres"), &["-V"]),
        "could not get the PostgreSQL version",
    )
    .await?;
    parse_major_version(&out.stdout).ok_or_else(|| {
        anyhow!(
            "unexpected `{}/postgres -V` output: {}",
            dir.display(),
            out.stdout.trim()
        )
    })
}

/// "postgres (PostgreSQL) 15.13 (Debian 15.13-0+deb12u1)" -> "15"; "... 9.6.24" -> "9.6".
fn parse_major_version(output: &str) -> Option<String> {
    let version = output
        .split("(PostgreSQL)")
        .nth(1)?
        .split_whitespace()
        .next()?;
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let first = parts.next()?;
    let first_num: u32 = first.parse().ok()?;
    if first_num >= 10 {
        Some(first.to_owned())
    } else {
        Some(format!("{first}.{}", parts.next()?))
    }
}

/// Looks `name` up in PATH, then in `fallbacks`.
fn find_program(name: &str, fallbacks: &[&str]) -> Option<PathBuf> {
    let from_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(name))
            .find(|p| is_executable(p))
    });
    from_path.or_else(|| {
        fallbacks
            .iter()
            .map(PathBuf::from)
            .find(|p| is_executable(p))
    })
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

// ---------------------------------------------------------------------------------------------
// Cluster operations

async fn init_cluster(bins: &PgBins, layout: &Layout, runner: &Runner) -> Result<()> {
    let began = Instant::now();
    let tmp = &layout.pgdata_tmp;
    if tokio::fs::symlink_metadata(tmp).await.is_ok() {
        tracing::warn!(path = %tmp.display(), "removing a partially initialized cluster");
        tokio::fs::remove_dir_all(tmp)
            .await
            .with_context(|| format!("could not remove {}", tmp.display()))?;
    }
    let tmp_str = path_str(tmp)?;
    tracing::info!(
        pgdata = %layout.pgdata.display(),
        initdb = %bins.initdb.display(),
        "creating a local PostgreSQL cluster"
    );
    let mut locale = "C.UTF-8";
    loop {
        let args: Vec<String> = [
            "-D",
            tmp_str,
            "-A",
            "trust",
            "-U",
            LOCAL_PG_USER,
            "--encoding=UTF8",
            &format!("--locale={locale}"),
            "--data-checksums",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out = exec(runner.command(&bins.initdb, &args, &layout.root)).await?;
        if out.success {
            break;
        }
        // initdb removes its output directory on failure, but make sure of it.
        let _ = tokio::fs::remove_dir_all(tmp).await;
        if locale != "C" && out.stderr.contains("locale") {
            tracing::info!("locale C.UTF-8 unavailable, creating the cluster with locale C");
            locale = "C";
            continue;
        }
        bail!(
            "{}{}",
            out.failure("could not create the local PostgreSQL cluster"),
            access_hint(runner, tmp).await
        );
    }

    // Also record the connection settings in the cluster, so that a server started by hand
    // (`pg_ctl -D ... start`) does not listen on TCP either. `pg_ctl start -o` repeats them.
    let conf = layout.pgdata_tmp.join("postgresql.conf");
    let socket_dir = path_str(&layout.socket_dir)?
        .replace('\\', "\\\\")
        .replace('\'', "''");
    let extra = format!(
        "\n# Added by fleetdesk: local cluster reachable through a Unix socket only.\n\
         listen_addresses = ''\n\
         port = {LOCAL_PG_PORT}\n\
         unix_socket_directories = '{socket_dir}'\n\
         unix_socket_permissions = 0700\n"
    );
    append_file(&conf, &extra).await?;

    tokio::fs::rename(tmp, &layout.pgdata)
        .await
        .with_context(|| {
            format!(
                "could not rename {} to {}",
                tmp.display(),
                layout.pgdata.display()
            )
        })?;
    tracing::info!(
        pgdata = %layout.pgdata.display(),
        locale,
        elapsed_ms = began.elapsed().as_millis() as u64,
        "created a local PostgreSQL cluster"
    );
    Ok(())
}

async fn append_file(path: &Path, text: &str) -> Result<()> {
    use tokio::io::AsyncWriteExt as _;
    let mut file = tokio::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .await
        .with_context(|| format!("could not open {}", path.display()))?;
    file.write_all(text.as_bytes())
        .await
        .with_context(|| format!("could not write {}", path.display()))?;
    file.sync_all().await?;
    Ok(())
}

/// `pg_ctl status`: whether a server is running on the cluster.
async fn cluster_is_running(bins: &PgBins, layout: &Layout, runner: &Runner) -> Result<bool> {
    let args = vec![
        "-D".to_owned(),
        path_str(&layout.pgdata)?.to_owned(),
        "status".to_owned(),
    ];
    let out = exec(runner.command(&bins.pg_ctl, &args, &layout.root)).await?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(3) => Ok(false),
        _ => bail!(
            "{}{}",
            out.failure("could not check the local PostgreSQL cluster"),
            access_hint(runner, &layout.pgdata).await
        ),
    }
}

/// Socket directory and port of the running server, from `postmaster.pid` (line 4: port,
/// line 5: first socket directory).
async fn running_socket(layout: &Layout) -> Result<(PathBuf, u16)> {
    let pid_file = layout.pgdata.join("postmaster.pid");
    let text = tokio::fs::read_to_string(&pid_file)
        .await
        .with_context(|| format!("could not read {}", pid_file.display()))?;
    parse_postmaster_pid(&text).ok_or_else(|| {
        anyhow!(
            "the local PostgreSQL server is running but does not listen on a Unix socket \
             (according to {}); stop it with `pg_ctl -D {} stop` so that fleetdesk can restart it",
            pid_file.display(),
            layout.pgdata.display()
        )
    })
}

fn parse_postmaster_pid(text: &str) -> Option<(PathBuf, u16)> {
    let lines: Vec<&str> = text.lines().collect();
    let port = lines.get(3)?.trim().parse().ok()?;
    let socket_dir = lines.get(4)?.trim();
    if !socket_dir.starts_with('/') {
        return None;
    }
    Some((PathBuf::from(socket_dir), port))
}

/// Whether the running server's settings are `settings` (`current_setting` of each).
async fn settings_hold(
    bins: &PgBins,
    layout: &Layout,
    socket_dir: &Path,
    port: u16,
    settings: &[(&str, &str)],
) -> Result<bool> {
    for (name, value) in settings {
        let query = format!("SHOW {name}");
        let cmd = psql_command(bins, layout, socket_dir, port, &["-tA", "-c", &query])?;
        let out = exec_ok(cmd, "could not read the local PostgreSQL's settings").await?;
        if out.stdout.trim() != *value {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `pg_ctl stop -m fast`, waiting (up to two minutes) for the server to be gone.
async fn stop_server(pg_ctl: &Path, pgdata: &Path, runner: &Runner) -> Result<()> {
    let args: Vec<String> = [
        "-D",
        path_str(pgdata)?,
        "-m",
        "fast",
        "-w",
        "-t",
        "120",
        "stop",
    ]
    .map(String::from)
    .to_vec();
    let cwd = pgdata.parent().unwrap_or(Path::new("/"));
    exec_ok(
        runner.command(pg_ctl, &args, cwd),
        "could not stop the local PostgreSQL cluster",
    )
    .await?;
    Ok(())
}

async fn start_cluster(
    bins: &PgBins,
    layout: &Layout,
    runner: &Runner,
    settings: &[(&str, &str)],
) -> Result<()> {
    let began = Instant::now();
    prepare_socket_dir(&layout.socket_dir, runner).await?;
    let mut options = format!(
        "-c listen_addresses='' -p {LOCAL_PG_PORT} -k {} -c unix_socket_permissions=0700",
        sh_quote(path_str(&layout.socket_dir)?)
    );
    for (name, value) in settings {
        let _ = write!(options, " -c {}", sh_quote(&format!("{name}={value}")));
    }
    let args = vec![
        "-D".to_owned(),
        path_str(&layout.pgdata)?.to_owned(),
        "-l".to_owned(),
        path_str(&layout.log_file)?.to_owned(),
        "-w".to_owned(),
        "-t".to_owned(),
        START_TIMEOUT_SECS.to_string(),
        "-o".to_owned(),
        options,
        "start".to_owned(),
    ];
    tracing::info!(
        pgdata = %layout.pgdata.display(),
        log_file = %layout.log_file.display(),
        "starting the local PostgreSQL cluster"
    );
    let out = exec(runner.command(&bins.pg_ctl, &args, &layout.root)).await?;
    if !out.success {
        let log = match tokio::fs::read_to_string(&layout.log_file).await {
            Ok(log) => format!(
                "\nlast lines of {}:\n{}",
                layout.log_file.display(),
                tail_lines(&log, 30)
            ),
            Err(_) => String::new(),
        };
        bail!(
            "{}{log}{}",
            out.failure("could not start the local PostgreSQL cluster"),
            access_hint(runner, &layout.pgdata).await
        );
    }
    tracing::info!(
        elapsed_ms = began.elapsed().as_millis() as u64,
        "local PostgreSQL cluster started"
    );
    Ok(())
}

/// Creates the socket directory (mode 0700, owned by the server's user). Needed before every
/// start: a `/tmp` socket directory does not survive reboots.
async fn prepare_socket_dir(dir: &Path, runner: &Runner) -> Result<()> {
    create_private_dir(dir).await?;
    let meta = tokio::fs::symlink_metadata(dir)
        .await
        .with_context(|| format!("could not stat {}", dir.display()))?;
    if !meta.is_dir() {
        bail!("socket directory {} is not a directory", dir.display());
    }
    match runner {
        Runner::AsPostgres { uid, .. } => {
            if meta.uid() != 0 && meta.uid() != *uid {
                bail!(
                    "socket directory {} belongs to uid {}, not to root or `{OS_PG_USER}`; \
                     remove it",
                    dir.display(),
                    meta.uid()
                );
            }
            chown_to_postgres(dir, *uid, false).await?;
        }
        Runner::CurrentUser { uid } => {
            // An existing directory in /tmp might have been planted by another user.
            if meta.uid() != *uid {
                bail!(
                    "socket directory {} belongs to uid {}, not to the current user; remove it",
                    dir.display(),
                    meta.uid()
                );
            }
        }
    }
    Ok(())
}

/// `psql` connected to the `postgres` database of the server at `socket_dir`/`port`.
fn psql_command(
    bins: &PgBins,
    layout: &Layout,
    socket_dir: &Path,
    port: u16,
    extra: &[&str],
) -> Result<Command> {
    let port = port.to_string();
    let mut args = vec![
        "-X",
        "-q",
        "-h",
        path_str(socket_dir)?,
        "-p",
        &port,
        "-U",
        LOCAL_PG_USER,
        "-d",
        "postgres",
        "-v",
        "ON_ERROR_STOP=1",
        "-v",
        "VERBOSITY=verbose",
    ];
    args.extend_from_slice(extra);
    let mut cmd = plain_command(&bins.psql, &args);
    cmd.current_dir(&layout.root);
    Ok(cmd)
}

/// Whether the `fleetdesk` database exists (also checks that the server accepts connections).
async fn database_exists(
    bins: &PgBins,
    layout: &Layout,
    socket_dir: &Path,
    port: u16,
) -> Result<bool> {
    let query = format!("SELECT 1 FROM pg_database WHERE datname = '{LOCAL_PG_DATABASE}'");
    let cmd = psql_command(bins, layout, socket_dir, port, &["-tA", "-c", &query])?;
    let out = exec(cmd).await?;
    if !out.success {
        bail!(
            "{}\n(server log: {})",
            out.failure("could not connect to the local PostgreSQL cluster"),
            layout.log_file.display()
        );
    }
    Ok(out.stdout.trim() == "1")
}

/// Creates the `fleetdesk` database. Returns false when it already existed.
async fn create_database(
    bins: &PgBins,
    layout: &Layout,
    socket_dir: &Path,
    port: u16,
) -> Result<bool> {
    let sql = format!("CREATE DATABASE {LOCAL_PG_DATABASE}");
    let out = exec(psql_command(bins, layout, socket_dir, port, &["-c", &sql])?).await?;
    if out.success {
        tracing::info!(database = LOCAL_PG_DATABASE, "created database");
        Ok(true)
    } else if out.stderr.contains("42P04") {
        // duplicate_database: created concurrently by someone else.
        Ok(false)
    } else {
        bail!(
            "{}",
            out.failure(&format!("could not create database {LOCAL_PG_DATABASE}"))
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

/// `postgres://postgres@<percent-encoded socket dir>:<port>/<db>`.
///
/// The socket directory goes in the host part: tokio-postgres treats a (percent-decoded) host
/// starting with `/` as a Unix socket directory, and so does libpq. (A `?host=` query parameter
/// would *add* a host in tokio-postgres, after the one of the authority, rather than replace it.)
fn connection_url(socket_dir: &Path, port: u16, database: &str) -> String {
    format!(
        "postgres://{LOCAL_PG_USER}@{}:{port}/{database}",
        percent_encode(socket_dir.as_os_str())
    )
}

fn percent_encode(s: &OsStr) -> String {
    let mut out = String::new();
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Quotes `s` for /bin/sh.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r#"'\''"#))
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str()
        .ok_or_else(|| anyhow!("path {} is not valid UTF-8", path.display()))
}

/// The last `max` bytes of `text` (at a char boundary).
fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_puts_the_socket_dir_in_the_host() {
        assert_eq!(
            connection_url(Path::new("/tmp/a b/run"), 5432, "fleetdesk"),
            "postgres://postgres@%2Ftmp%2Fa%20b%2Frun:5432/fleetdesk"
        );
    }

    #[test]
    fn long_paths_get_a_socket_dir_in_tmp() {
        let short = Path::new("/srv/fleetdesk/postgres");
        assert_eq!(socket_dir_for(short, 5432), short.join("run"));
        let long = PathBuf::from(format!("/srv/{}/postgres", "x".repeat(80)));
        let dir = socket_dir_for(&long, 5432);
        assert!(
            dir.to_str().unwrap().starts_with("/tmp/fleetdesk-pg-"),
            "{}",
            dir.display()
        );
        assert_eq!(dir, socket_dir_for(&long, 5432));
        // Exactly at the limit: 103 bytes including "/.s.PGSQL.5432".
        let at_limit = PathBuf::from(format!("/{}", "y".repeat(103 - 14 - 5)));
        assert_eq!(
            at_limit.join("run").as_os_str().len() + "/.s.PGSQL.5432".len(),
            103
        );
        assert_eq!(socket_dir_for(&at_limit, 5432), at_limit.join("run"));
        let over = PathBuf::from(format!("/{}", "y".repeat(103 - 14 - 4)));
        assert_ne!(socket_dir_for(&over, 5432), over.join("run"));
        let comma = Path::new("/srv/a,b/postgres");
        assert_ne!(socket_dir_for(comma, 5432), comma.join("run"));
    }

    #[test]
    fn parses_versions_and_pid_files() {
        assert_eq!(
            parse_major_version("postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)\n"),
            Some("15".to_owned())
        );
        assert_eq!(
            parse_major_version("postgres (PostgreSQL) 9.6.24"),
            Some("9.6".to_owned())
        );
        assert_eq!(
            parse_major_version("postgres (PostgreSQL) 17beta1"),
            Some("17".to_owned())
        );
        let pid = "123\n/srv/pg/data\n1700000000\n5432\n/srv/pg/run\n\n  5432001  1\nready   \n";
        assert_eq!(
            parse_postmaster_pid(pid),
            Some((PathBuf::from("/srv/pg/run"), 5432))
        );
        let tcp_only = "123\n/srv/pg/data\n1700000000\n5432\n\nlocalhost\n";
        assert_eq!(parse_postmaster_pid(tcp_only), None);
        assert_eq!(sh_quote("it's"), r#"'it'\''s'"#);
    }

    /// Both ways of switching to the postgres user run the program as that user, with the
    /// arguments intact (only meaningful as root; skipped otherwise).
    #[tokio::test]
    async fn runuser_and_su_run_as_postgres() {
        let Runner::AsPostgres { uid, .. } = Runner::detect().await.unwrap() else {
            eprintln!("not root: skipped");
            return;
        };
        let mut switches = Vec::new();
        if let Some(p) = find_program("runuser", &["/usr/sbin/runuser", "/sbin/runuser"]) {
            switches.push(SwitchUser::Runuser(p));
        }
        if let Some(p) = find_program("su", &["/bin/su", "/usr/bin/su"]) {
            switches.push(SwitchUser::Su(p));
        }
        assert!(!switches.is_empty());
        for switch in switches {
            let runner = Runner::AsPostgres { uid, switch };
            let args = [
                "-c".to_owned(),
                r#"echo "$(id -un)" "$0""#.to_owned(),
                "it's $HOME".to_owned(),
            ];
            let out = exec(runner.command(Path::new("/bin/sh"), &args, Path::new("/")))
                .await
                .unwrap();
            assert!(out.success, "{}", out.failure("switch user"));
            assert_eq!(out.stdout.trim(), "postgres it's $HOME", "{runner:?}");
        }
    }

    /// Stops the cluster and removes the test directories, even when the test fails.
    struct Cleanup {
        dirs: Vec<PathBuf>,
        pg: Option<LocalPostgres>,
    }

    impl Drop for Cleanup {
        fn drop(&mut self) {
            if let Some(pg) = &self.pg {
                let args = ["-D", pg.pgdata.to_str().unwrap(), "-m", "immediate", "stop"];
                let cmd = pg.runner.command(
                    &pg.bin_dir.join("pg_ctl"),
                    &args.map(String::from),
                    Path::new("/"),
                );
                let _ = std::process::Command::new(cmd.as_std().get_program())
                    .args(cmd.as_std().get_args())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            for dir in &self.dirs {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }

    fn fresh_dir(tag: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        PathBuf::from(format!("/tmp/fdpg-{tag}-{}-{nanos}", std::process::id()))
    }

    /// Runs `sql` with psql through `url` (so libpq parses the URL too) and returns the output.
    async fn psql(pg: &LocalPostgres, sql: &str) -> String {
        let out = exec(plain_command(
            &pg.bin_dir.join("psql"),
            &["-X", "-tA", "-v", "ON_ERROR_STOP=1", &pg.url, "-c", sql],
        ))
        .await
        .unwrap();
        assert!(out.success, "{}", out.failure("psql"));
        out.stdout.trim().to_owned()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn initializes_reuses_and_restarts_a_cluster() {
        let dir = fresh_dir("life");
        let mut cleanup = Cleanup {
            dirs: vec![dir.clone()],
            pg: None,
        };

        let t = Instant::now();
        let pg = ensure_local_postgres(&dir).await.unwrap();
        eprintln!("fresh init + start: {:?}", t.elapsed());
        cleanup.pg = Some(pg.clone());
        assert_eq!(pg.action, LocalPostgresAction::Initialized);
        assert_eq!(pg.socket_dir, dir.join("postgres/run"));
        assert!(pg.socket_dir.join(".s.PGSQL.5432").exists());
        assert!(pg.pgdata.join("PG_VERSION").exists());
        assert!(pg.log_file.exists());
        eprintln!("url: {}", pg.url);
        assert_eq!(psql(&pg, "SELECT 1").await, "1");
        assert_eq!(psql(&pg, "SELECT current_database()").await, "fleetdesk");
        assert_eq!(psql(&pg, "SHOW listen_addresses").await, "");
        assert_eq!(psql(&pg, "SHOW server_encoding").await, "UTF8");
        eprintln!("lc_ctype: {}", psql(&pg, "SHOW lc_ctype").await);
        psql(
            &pg,
            "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)",
        )
        .await;

        let t = Instant::now();
        let again = ensure_local_postgres(&dir).await.unwrap();
        eprintln!("reuse: {:?}", t.elapsed());
        assert_eq!(again.action, LocalPostgresAction::Reused);
        assert_eq!(again.url, pg.url);

        pg.stop().await.unwrap();
        assert!(!pg.socket_dir.join(".s.PGSQL.5432").exists());

        let t = Instant::now();
        let restarted = ensure_local_postgres(&dir).await.unwrap();
        eprintln!("restart: {:?}", t.elapsed());
        assert_eq!(restarted.action, LocalPostgresAction::Started);
        assert_eq!(restarted.url, pg.url);
        assert_eq!(psql(&restarted, "SELECT v FROM kept").await, "42");

        restarted.stop().await.unwrap();
        cleanup.pg = None;
        drop(cleanup);
        assert!(!dir.exists());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_cluster_runs_with_its_settings_and_restarts_when_they_change() {
        let dir = fresh_dir("set");
        let mut cleanup = Cleanup {
            dirs: vec![dir.clone()],
            pg: None,
        };
        let wanted = [("max_connections", "150"), ("fsync", "off")];
        let pg = ensure_local_postgres_with(&dir, &wanted).await.unwrap();
        cleanup.pg = Some(pg.clone());
        assert_eq!(pg.action, LocalPostgresAction::Initialized);
        let show = async |pg: &LocalPostgres| {
            pg.psql("postgres", "SHOW max_connections; SHOW fsync")
                .await
                .unwrap()
        };
        assert_eq!(show(&pg).await, "150\noff\n");
        assert_eq!(
            pg.psql(
                "postgres",
                "SELECT current_database(), 1 + 1 UNION ALL SELECT 'x', 3"
            )
            .await
            .unwrap(),
            "postgres|2\nx|3\n"
        );
        let err = pg.psql("postgres", "SELECT nonsense").await.unwrap_err();
        assert!(format!("{err:#}").contains("nonsense"), "{err:#}");

        let same = ensure_local_postgres_with(&dir, &wanted).await.unwrap();
        assert_eq!(same.action, LocalPostgresAction::Reused);
        let more = [("max_connections", "160"), ("fsync", "off")];
        let restarted = ensure_local_postgres_with(&dir, &more).await.unwrap();
        assert_eq!(restarted.action, LocalPostgresAction::Started);
        assert_eq!(show(&restarted).await, "160\noff\n");
        assert_eq!(
            restarted.url_of("postgres"),
            pg.url.replace("/fleetdesk", "/postgres")
        );
        restarted.stop().await.unwrap();
        cleanup.pg = None;
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn long_data_dir_and_concurrent_callers() {
        let base = fresh_dir("long");
        let dir = base.join("a-rather-long-directory-name-to-overflow-the-unix-socket-path-limit");
        let mut cleanup = Cleanup {
            dirs: vec![base.clone()],
            pg: None,
        };

        let (a, b) = tokio::join!(ensure_local_postgres(&dir), ensure_local_postgres(&dir));
        let (a, b) = (a.unwrap(), b.unwrap());
        cleanup.pg = Some(a.clone());
        cleanup.dirs.push(a.socket_dir.clone());
        let mut actions = [a.action, b.action];
        actions.sort_by_key(|a| *a as u8);
        assert_eq!(
            actions,
            [
                LocalPostgresAction::Initialized,
                LocalPostgresAction::Reused
            ]
        );
        assert_eq!(a.url, b.url);
        assert!(
            a.socket_dir
                .to_str()
                .unwrap()
                .starts_with("/tmp/fleetdesk-pg-"),
            "{}",
            a.socket_dir.display()
        );
        assert_eq!(psql(&a, "SELECT 1").await, "1");

        a.stop().await.unwrap();
        // The /tmp socket directory may vanish (reboot): it is recreated on start.
        std::fs::remove_dir_all(&a.socket_dir).unwrap();
        let c = ensure_local_postgres(&dir).await.unwrap();
        assert_eq!(c.action, LocalPostgresAction::Started);
        assert_eq!(psql(&c, "SELECT 2").await, "2");
        c.stop().await.unwrap();
        cleanup.pg = None;
    }
}
