//! The yardstick of the load benchmark: what PostgreSQL itself answers on this machine, with
//! `pgbench` on a scratch database of the same server (`fleetdesk_pgbench_<pid>`, initialized
//! with `pgbench -i -s <scale>`, dropped at the end, also on error).
//!
//! `pgbench -S` (one indexed SELECT per transaction) is what a read request is compared with,
//! `pgbench -N` (three UPDATE/INSERT statements in a transaction, without the contended
//! branch and teller updates) what a write request is compared with. Both run with the
//! clients of the HTTP scenarios (`-c C -j 2`) for their duration, after a warm-up run of the
//! same length as theirs, while the fleetdesk server stands idle beside them.

use crate::harness::{CpuShare, CpuTicks, Database, DbCounters, WalHold};
use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use std::io::{self, Write};
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `-S`: the built-in select-only script.
    SelectOnly,
    /// `-N`: the built-in simple-update script.
    SimpleUpdate,
}

impl Mode {
    pub(crate) const ALL: [Mode; 2] = [Mode::SelectOnly, Mode::SimpleUpdate];

    pub(crate) fn flag(self) -> &'static str {
        match self {
            Mode::SelectOnly => "-S",
            Mode::SimpleUpdate => "-N",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Mode::SelectOnly => "select_only",
            Mode::SimpleUpdate => "simple_update",
        }
    }
}

/// How pgbench runs: the HTTP scenarios' clients, duration and warm-up.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) scale: u32,
    pub(crate) clients: usize,
    /// `-T`, whole seconds (at least 1).
    pub(crate) seconds: u64,
    /// `-t`: transactions per client instead of `-T`, for a run of a fixed number of requests.
    pub(crate) transactions_per_client: Option<u64>,
    /// Seconds of an unmeasured run before each measured one; 0 for none.
    pub(crate) warmup_seconds: u64,
}

impl Options {
    fn threads(&self) -> usize {
        self.clients.min(2)
    }

    fn args(&self, mode: Mode, warmup: bool) -> Vec<String> {
        let mut a = vec![
            mode.flag().to_owned(),
            "-c".into(),
            self.clients.to_string(),
            "-j".into(),
            self.threads().to_string(),
        ];
        match self.transactions_per_client {
            Some(t) if !warmup => a.extend(["-t".into(), t.to_string()]),
            _ => a.extend([
                "-T".into(),
                (if warmup {
                    self.warmup_seconds
                } else {
                    self.seconds
                })
                .max(1)
                .to_string(),
            ]),
        }
        a
    }
}

/// What pgbench printed of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Figures {
    /// Transactions per second without the time the clients took to connect.
    pub(crate) tps: f64,
    pub(crate) latency_ms: Option<f64>,
    pub(crate) transactions: Option<u64>,
    pub(crate) failed: Option<u64>,
}

/// Reads pgbench's summary. The tps line is `tps = N (without initial connection time)` since
/// PostgreSQL 14, `tps = N (excluding connections establishing)` before (after a line
/// `including connections establishing`); a line without either remark is taken when there is
/// no other.
pub(crate) fn parse_output(out: &str) -> anyhow::Result<Figures> {
    let value = |line: &str, prefix: &str| -> Option<f64> {
        line.trim()
            .strip_prefix(prefix)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let tps_lines: Vec<&str> = out
        .lines()
        .filter(|l| l.trim_start().starts_with("tps = "))
        .collect();
    let tps = tps_lines
        .iter()
        .find(|l| l.contains("without initial connection time") || l.contains("excluding"))
        .or_else(|| tps_lines.iter().find(|l| !l.contains("including")))
        .or(tps_lines.first())
        .and_then(|l| value(l, "tps = "))
        .ok_or_else(|| anyhow!("pgbench printed no `tps = ` line"))?;
    let find = |prefix: &str| out.lines().find_map(|l| value(l, prefix));
    Ok(Figures {
        tps,
        latency_ms: find("latency average = "),
        transactions: find("number of transactions actually processed: ").map(|n| n as u64),
        failed: find("number of failed transactions: ").map(|n| n as u64),
    })
}

/// One measured pgbench run.
pub(crate) struct Run {
    pub(crate) mode: Mode,
    pub(crate) command: String,
    pub(crate) figures: Figures,
    pub(crate) cpu: Option<CpuShare>,
    /// The scratch database's counters around the measured run (the WAL is the server's).
    pub(crate) db: Option<DbCounters>,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        let n = self.figures.transactions.unwrap_or(0);
        json!({
            "mode": self.mode.id(),
            "command": self.command,
            "tps": self.figures.tps,
            "latency_average_ms": self.figures.latency_ms,
            "transactions": self.figures.transactions,
            "failed_transactions": self.figures.failed,
            "cpu_percent_of_all_cores": self.cpu.map(|c| json!({
                "machine_busy": c.machine_busy_pct,
                "postgres": c.postgres_pct,
                "pgbench_and_other": c.other_pct,
            })),
            "database_counters": self.db.as_ref().map(|d| d.json(n)),
        })
    }
}

/// Runs `pgbench` with `args` against `url` and returns what it printed on standard output.
fn pgbench(args: &[String], url: &str) -> anyhow::Result<String> {
    let out = Command::new("pgbench")
        .args(args)
        .arg(url)
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(Stdio::null())
        .output()
        .context("running pgbench (is the PostgreSQL client installed?)")?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "pgbench {} failed with {}: {}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            stdout.trim()
        );
    }
    Ok(stdout)
}

/// Initializes a scratch database on `server_url` and measures `-S` and `-N` on it.
/// `server_pid` is the idle fleetdesk server's, for the CPU shares.
pub(crate) fn run(server_url: &str, o: &Options, server_pid: u32) -> anyhow::Result<Vec<Run>> {
    let db = Database::create_named(server_url, "pgbench")?;
    println!(
        "pgbench: initializing {} (pgbench -i -s {}, dropped at the end)",
        db.name, o.scale
    );
    pgbench(
        &["-i".into(), "-q".into(), "-s".into(), o.scale.to_string()],
        &db.url,
    )?;
    let hold = DbCounters::enable_own_wal(&db.url)
        .then(|| WalHold::start(&db.url).ok())
        .flatten();
    let own_wal = hold.is_some();
    let mut runs = Vec::new();
    for mode in Mode::ALL {
        if o.warmup_seconds > 0 {
            pgbench(&o.args(mode, true), &db.url)?;
        }
        let args = o.args(mode, false);
        let command = format!("pgbench {} (scale {})", args.join(" "), o.scale);
        print!("running {command:<38} ");
        io::stdout().flush().ok();
        let before = DbCounters::read(&db.url).ok();
        let cpu_before = CpuTicks::read(server_pid);
        let out = pgbench(&args, &db.url)?;
        let cpu_after = CpuTicks::read(server_pid);
        let figures = parse_output(&out)?;
        // A backend reports its counts as it exits, just after pgbench saw it close.
        thread::sleep(Duration::from_millis(500));
        let db_counters = before.zip(DbCounters::read(&db.url).ok()).map(|(b, a)| {
            let mut d = a.minus(&b);
            if own_wal {
                d.own_wal = DbCounters::own_wal(&db.url, &b, &a).ok();
            }
            d
        });
        println!(
            "{:.1} tps, {} transactions",
            figures.tps,
            figures.transactions.map_or("?".into(), |n| n.to_string())
        );
        runs.push(Run {
            mode,
            command,
            figures,
            cpu: cpu_before
                .zip(cpu_after)
                .map(|(b, a)| a.share_since(&b, figures.transactions.unwrap_or(0))),
            db: db_counters,
        });
    }
    drop(hold);
    drop(db);
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PG15: &str = "\
pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: <builtin: select only>
scaling factor: 10
query mode: simple
number of clients: 16
number of threads: 2
maximum number of tries: 1
duration: 10 s
number of transactions actually processed: 123456
number of failed transactions: 0 (0.000%)
latency average = 1.296 ms
initial connection time = 140.200 ms
tps = 12345.678901 (without initial connection time)
";

    const PG13: &str = "\
transaction type: <builtin: simple update>
number of transactions actually processed: 24000
latency average = 6.667 ms
tps = 2390.100000 (including connections establishing)
tps = 2400.500000 (excluding connections establishing)
";

    #[test]
    fn reads_the_tps_without_connection_time() {
        let f = parse_output(PG15).unwrap();
        assert_eq!(f.tps, 12345.678901);
        assert_eq!(f.latency_ms, Some(1.296));
        assert_eq!(f.transactions, Some(123456));
        assert_eq!(f.failed, Some(0));
        let f = parse_output(PG13).unwrap();
        assert_eq!(f.tps, 2400.5);
        assert_eq!(f.failed, None);
    }

    #[test]
    fn takes_a_plain_tps_line_and_refuses_none() {
        assert_eq!(parse_output("tps = 17.5\n").unwrap().tps, 17.5);
        assert!(parse_output("pgbench: error: connection failed\n").is_err());
        assert!(parse_output("tps = fast\n").is_err());
    }

    #[test]
    fn runs_with_the_http_scenarios_clients() {
        let mut o = Options {
            scale: 10,
            clients: 16,
            seconds: 10,
            transactions_per_client: None,
            warmup_seconds: 2,
        };
        assert_eq!(
            o.args(Mode::SelectOnly, false).join(" "),
            "-S -c 16 -j 2 -T 10"
        );
        assert_eq!(
            o.args(Mode::SimpleUpdate, true).join(" "),
            "-N -c 16 -j 2 -T 2"
        );
        o.clients = 1;
        o.transactions_per_client = Some(500);
        assert_eq!(
            o.args(Mode::SelectOnly, false).join(" "),
            "-S -c 1 -j 1 -t 500"
        );
        assert_eq!(
            o.args(Mode::SelectOnly, true).join(" "),
            "-S -c 1 -j 1 -T 2"
        );
    }
}
