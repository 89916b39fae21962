//! The clients the tests drive, from where `cargo xtask test` installed them: the Python
//! virtual environment `target/peers/venv` (tests/requirements.txt) and the npm packages of
//! tests/mcp_sdk_ts. Never the machine's own Python: a test run by plain `cargo nextest` finds
//! the same pinned packages, or stops saying how to install them.

use std::path::PathBuf;

/// The target directory of the running test executable (`<target>/<profile>/deps/<test>`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.ancestors()
        .nth(3)
        .expect("the test executable sits in <target>/<profile>/deps")
        .to_path_buf()
}

/// A program of the tests' Python environment (`python3`, `openapi-python-client`, ...).
pub fn python_bin(name: &str) -> PathBuf {
    let path = target_dir().join("peers/venv/bin").join(name);
    assert!(
        path.is_file(),
        "{} is missing: run `cargo xtask test`, which installs the test peers of \
         tests/requirements.txt into target/peers/venv",
        path.display()
    );
    path
}

/// The Python interpreter of the tests' environment.
pub fn python() -> PathBuf {
    python_bin("python3")
}
