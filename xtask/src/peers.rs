//! The real clients the tests drive, installed where the test command can find them and
//! nowhere else: Python packages in a virtual environment under the target directory, npm
//! packages from the lockfiles in the repository, cargo-nextest, and the pinned diesel_cli
//! (`target/peers/bin/diesel`, for the schema test of crates/pg).
//!
//! Each step is skipped when what it installs is already there for the same pinned list (the
//! list is copied next to what it installed and compared byte for byte), so a second run
//! costs a few file reads. A missing tool stops the run with one line naming it.

use anyhow::{Context, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Folders under `tests/` with a `package-lock.json` whose packages the tests run.
const NPM_PROJECTS: &[&str] = &[
    "tests/mcp_sdk_ts",
    "tests/browser",
    "tests/webhook_receivers",
];

/// What the test run needs on its environment: `PATH` with the virtual environment first.
pub struct Peers {
    venv: PathBuf,
}

impl Peers {
    /// Installs what is missing and returns where it is.
    pub fn install(root: &Path) -> anyhow::Result<Peers> {
        programs()?;
        browser()?;
        nextest()?;
        diesel_cli(&target_dir(root).join("peers"))?;
        let venv = target_dir(root).join("peers").join("venv");
        python(root, &venv)?;
        for project in NPM_PROJECTS {
            let dir = root.join(project);
            if dir.join("package-lock.json").is_file() {
                npm(&dir)?;
            }
        }
        Ok(Peers { venv })
    }

    /// Prepares `cmd` to find the installed clients: the virtual environment's `bin` first on
    /// `PATH` (so `python3` is its interpreter) and `VIRTUAL_ENV` set.
    pub fn apply(&self, cmd: &mut Command) {
        let bin = self.venv.join("bin");
        let mut path = OsString::from(bin.as_os_str());
        if let Some(old) = std::env::var_os("PATH") {
            path.push(":");
            path.push(old);
        }
        cmd.env("PATH", path).env("VIRTUAL_ENV", &self.venv);
    }
}

/// The target directory: `CARGO_TARGET_DIR` when set, else `target/` of the workspace.
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

fn found(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Programs the tests run that no registry here installs for them.
const PROGRAMS: &[(&str, &str)] = &[
    ("bash", "the README walk-through test runs its commands"),
    ("curl", "the README walk-through test calls the service"),
    ("pg_dump", "the secrets test dumps a database"),
    ("date", "the README walk-through test computes its times"),
];

fn programs() -> anyhow::Result<()> {
    for (program, why) in PROGRAMS {
        if !found(program, "--version") {
            bail!("missing: {program} ({why})");
        }
    }
    Ok(())
}

/// The browser the dashboard's tests drive: Debian's Chromium, with the Noto CJK fonts so
/// Chinese text is drawn, installed with apt-get when missing (as root, or through `sudo -n`):
/// without recommended packages, after `apt-get update` when the package lists are missing,
/// and only when it upgrades nothing already installed (a simulated install is read first).
const BROWSER: &str = "/usr/bin/chromium";
const BROWSER_PACKAGES: &[&str] = &["chromium", "fonts-noto-cjk"];
const CJK_FONT: &str = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc";
/// Where apt keeps the package lists `apt-get update` downloads.
const APT_LISTS: &str = "/var/lib/apt/lists";

fn browser() -> anyhow::Result<()> {
    if Path::new(BROWSER).is_file() && Path::new(CJK_FONT).is_file() {
        return Ok(());
    }
    let packages = BROWSER_PACKAGES.join(" ");
    let by_hand = format!("apt-get install --no-install-recommends {packages}");
    if !has_package_lists(Path::new(APT_LISTS)) {
        eprintln!("apt's package lists are missing; running apt-get update");
        if !apt()
            .arg("update")
            .arg("-q")
            .status()
            .is_ok_and(|s| s.success())
        {
            bail!("missing: {BROWSER} (apt-get update failed; then run {by_hand})");
        }
    }
    let simulated = apt()
        .args(["install", "--simulate", "--no-install-recommends", "-q"])
        .args(BROWSER_PACKAGES)
        .output()
        .context("running apt-get install --simulate")?;
    if !simulated.status.success() {
        bail!(
            "missing: {BROWSER} (apt-get cannot install {packages}: {})",
            String::from_utf8_lossy(&simulated.stderr).trim()
        );
    }
    let plan = AptPlan::read(&String::from_utf8_lossy(&simulated.stdout));
    if !plan.upgrades.is_empty() {
        bail!(
            "missing: {BROWSER}; installing {packages} would upgrade {} already installed, \
             which the test command does not do: run {by_hand} yourself if that is fine",
            plan.upgrades.join(", ")
        );
    }
    eprintln!(
        "installing {packages} with apt-get ({} packages, none upgraded), for the dashboard's \
         browser tests",
        plan.installs.len()
    );
    let ok = apt()
        .args([
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            "--no-upgrade",
        ])
        .args(BROWSER_PACKAGES)
        .status()
        .is_ok_and(|s| s.success());
    if !ok || !Path::new(BROWSER).is_file() {
        bail!("missing: {BROWSER} ({by_hand} failed; the dashboard's browser tests drive it)");
    }
    Ok(())
}

/// `apt-get`, as root or through `sudo -n`, without questions.
fn apt() -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    let mut apt = if root {
        Command::new("apt-get")
    } else {
        let mut sudo = Command::new("sudo");
        sudo.args(["-n", "apt-get"]);
        sudo
    };
    apt.env("DEBIAN_FRONTEND", "noninteractive");
    apt
}

/// True when `dir` holds a package list (`apt-get update` has run): a file named
/// `..._Packages`, compressed or not.
fn has_package_lists(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with("_Packages") || name.contains("_Packages.")
        })
    })
}

/// What a simulated `apt-get install` would do: the packages it installs new, and those
/// already installed that it upgrades.
#[derive(Debug, Default, PartialEq, Eq)]
struct AptPlan {
    installs: Vec<String>,
    upgrades: Vec<String>,
}

impl AptPlan {
    /// Reads `apt-get --simulate` output: `Inst NAME (VERSION ...)` installs a package,
    /// `Inst NAME [OLD] (NEW ...)` upgrades one.
    fn read(simulated: &str) -> AptPlan {
        let mut plan = AptPlan::default();
        for line in simulated.lines() {
            let Some(rest) = line.strip_prefix("Inst ") else {
                continue;
            };
            let (name, after) = rest.split_once(' ').unwrap_or((rest, ""));
            if after.starts_with('[') {
                plan.upgrades.push(name.to_owned());
            } else {
                plan.installs.push(name.to_owned());
            }
        }
        plan
    }
}

fn nextest() -> anyhow::Result<()> {
    if found("cargo-nextest", "--version") {
        return Ok(());
    }
    eprintln!("cargo-nextest is missing; installing it with cargo install");
    let ok = Command::new("cargo")
        .args(["install", "cargo-nextest", "--locked"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        bail!("missing: cargo-nextest (cargo install cargo-nextest --locked failed)");
    }
    Ok(())
}

/// The diesel_cli whose `print-schema` made crates/pg/src/schema.rs; crates/pg/tests/schema.rs
/// runs it. Pinned, since another version may print the same schema differently.
const DIESEL_CLI_VERSION: &str = "2.3.14";

/// Installs diesel_cli (PostgreSQL only) into `peers/bin` unless that version is there. The
/// build links libpq, so it needs libpq's development files.
fn diesel_cli(peers: &Path) -> anyhow::Result<()> {
    let bin = peers.join("bin/diesel");
    let installed = Command::new(&bin)
        .arg("--version")
        .output()
        .is_ok_and(|out| {
            String::from_utf8_lossy(&out.stdout).contains(&format!("Version: {DIESEL_CLI_VERSION}"))
        });
    if installed {
        return Ok(());
    }
    eprintln!(
        "installing diesel_cli {DIESEL_CLI_VERSION} into {} (about a minute on two quiet cores)",
        peers.display()
    );
    let ok = Command::new("cargo")
        .args(["install", "diesel_cli", "--locked", "--no-default-features"])
        .args(["--features", "postgres", "--version"])
        .arg(format!("={DIESEL_CLI_VERSION}"))
        .arg("--root")
        .arg(peers)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        bail!(
            "missing: diesel_cli {DIESEL_CLI_VERSION} (cargo install failed; it links libpq: \
             on Debian apt-get install libpq-dev)"
        );
    }
    Ok(())
}

/// True when `installed` holds the same bytes as `wanted`.
fn same(wanted: &Path, installed: &Path) -> anyhow::Result<bool> {
    let wanted = std::fs::read(wanted).with_context(|| format!("reading {}", wanted.display()))?;
    Ok(std::fs::read(installed).is_ok_and(|have| have == wanted))
}

fn python(root: &Path, venv: &Path) -> anyhow::Result<()> {
    let requirements = root.join("tests/requirements.txt");
    let stamp = venv.join("fleetdesk-requirements.txt");
    let interpreter = venv.join("bin/python3");
    if interpreter.is_file() && same(&requirements, &stamp)? {
        return Ok(());
    }
    if !found("python3", "--version") {
        bail!("missing: python3 (3.10 or newer, with its venv module)");
    }
    if !interpreter.is_file() {
        eprintln!(
            "making the test peers' Python environment in {}",
            venv.display()
        );
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(venv)
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            bail!(
                "missing: the python3 venv module (python3 -m venv failed; on Debian: apt-get install python3-venv)"
            );
        }
    }
    eprintln!("installing the test peers of tests/requirements.txt");
    let installed = Command::new(&interpreter)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements)
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        bail!(
            "missing: the Python packages of tests/requirements.txt (pip install failed; see above)"
        );
    }
    std::fs::copy(&requirements, &stamp).context("recording the installed requirements")?;
    Ok(())
}

fn npm(dir: &Path) -> anyhow::Result<()> {
    let lock = dir.join("package-lock.json");
    let stamp = dir.join("node_modules/.fleetdesk-package-lock.json");
    if same(&lock, &stamp)? {
        return Ok(());
    }
    if !found("npm", "--version") || !found("node", "--version") {
        bail!(
            "missing: node and npm (Node.js 20 or newer), for {}",
            dir.display()
        );
    }
    eprintln!("installing the npm packages of {}", lock.display());
    let installed = Command::new("npm")
        .args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
        ])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        bail!(
            "missing: the npm packages of {} (npm ci failed; see above)",
            lock.display()
        );
    }
    std::fs::copy(&lock, &stamp).context("recording the installed lockfile")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulated_install_tells_new_packages_from_upgrades() {
        let out = "\
NOTE: This is only a simulation!
Reading package lists...
The following NEW packages will be installed:
  chromium libopus0
Inst libsystemd0 [252.30-1~deb12u2] (252.31-1~deb12u1 Debian:12.15/oldstable [amd64])
Inst libopus0 (1.3.1-3 Debian:12.15/oldstable [amd64])
Inst chromium (140.0.7339.185-1~deb12u1 Debian-Security:12/oldstable-security [amd64])
Conf libopus0 (1.3.1-3 Debian:12.15/oldstable [amd64])
";
        assert_eq!(
            AptPlan::read(out),
            AptPlan {
                installs: vec!["libopus0".into(), "chromium".into()],
                upgrades: vec!["libsystemd0".into()],
            }
        );
    }

    #[test]
    fn package_lists_are_found_by_their_files() {
        let dir = std::env::temp_dir().join(format!("xtask-apt-lists-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("partial")).unwrap();
        std::fs::write(dir.join("lock"), "").unwrap();
        assert!(!has_package_lists(&dir));
        std::fs::write(
            dir.join("deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4"),
            "",
        )
        .unwrap();
        assert!(has_package_lists(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!has_package_lists(&dir));
    }
}
