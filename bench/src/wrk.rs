//! A second measuring instrument beside our own client (http.rs): `wrk` (Debian package `wrk`),
//! an independent HTTP load generator with its own event loop and latency histogram. The load
//! benchmark runs it on `GET /accounts` with the scenarios' connections and duration, so the
//! figures compared with `pgbench -S` do not rest on our client alone.

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use std::process::{Command, Stdio};

/// One measured run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Run {
    pub(crate) command: String,
    pub(crate) requests: u64,
    pub(crate) seconds: f64,
    /// wrk's `Requests/sec`.
    pub(crate) rps: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p90_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) max_ms: f64,
    /// Answers outside 2xx and 3xx.
    pub(crate) non_2xx: u64,
    /// wrk's `Socket errors` line, when it printed one.
    pub(crate) socket_errors: Option<String>,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        json!({
            "command": self.command,
            "requests": self.requests,
            "seconds": self.seconds,
            "requests_per_second": self.rps,
            "p50_ms": self.p50_ms,
            "p90_ms": self.p90_ms,
            "p99_ms": self.p99_ms,
            "max_ms": self.max_ms,
            "non_2xx": self.non_2xx,
            "socket_errors": self.socket_errors,
        })
    }
}

/// Whether `wrk` is on the PATH.
pub(crate) fn available() -> bool {
    Command::new("wrk")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// `GET url` with `Authorization: Bearer <key>` from `connections` connections on two threads
/// for `seconds`, after an unmeasured run of `warmup` seconds (none when 0).
pub(crate) fn get(
    url: &str,
    key: &str,
    connections: usize,
    seconds: u64,
    warmup: u64,
) -> anyhow::Result<Run> {
    let threads = connections.clamp(1, 2);
    let args = |seconds: u64| {
        vec![
            "-t".to_owned(),
            threads.to_string(),
            "-c".into(),
            connections.to_string(),
            "-d".into(),
            format!("{}s", seconds.max(1)),
            "--latency".into(),
            "-H".into(),
            format!("Authorization: Bearer {key}"),
            url.to_owned(),
        ]
    };
    if warmup > 0 {
        wrk(&args(warmup))?;
    }
    let out = wrk(&args(seconds))?;
    let mut run = parse(&out).with_context(|| format!("reading wrk's output:\n{out}"))?;
    run.command = format!(
        "wrk -t {threads} -c {connections} -d {seconds}s --latency -H 'Authorization: Bearer …' {url}"
    );
    Ok(run)
}

fn wrk(args: &[String]) -> anyhow::Result<String> {
    let out = Command::new("wrk")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running wrk (Debian package `wrk`)")?;
    if !out.status.success() {
        bail!(
            "wrk exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Reads wrk 4's report (run with `--latency`).
fn parse(out: &str) -> anyhow::Result<Run> {
    let mut run = Run {
        command: String::new(),
        requests: 0,
        seconds: 0.0,
        rps: f64::NAN,
        p50_ms: f64::NAN,
        p90_ms: f64::NAN,
        p99_ms: f64::NAN,
        max_ms: f64::NAN,
        non_2xx: 0,
        socket_errors: None,
    };
    for line in out.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Latency", _avg, _stdev, max, ..] => run.max_ms = duration_ms(max)?,
            ["50%", v] => run.p50_ms = duration_ms(v)?,
            ["90%", v] => run.p90_ms = duration_ms(v)?,
            ["99%", v] => run.p99_ms = duration_ms(v)?,
            [n, "requests", "in", secs, ..] => {
                run.requests = n.parse()?;
                run.seconds = duration_ms(secs.trim_end_matches(','))? / 1000.0;
            }
            ["Non-2xx", "or", "3xx", "responses:", n] => run.non_2xx = n.parse()?,
            ["Requests/sec:", v] => run.rps = v.parse()?,
            ["Socket", "errors:", ..] => run.socket_errors = Some(line.to_owned()),
            _ => {}
        }
    }
    if run.rps.is_nan() || run.p99_ms.is_nan() || run.requests == 0 {
        bail!("no requests/s, p99 or request count");
    }
    Ok(run)
}

/// wrk's durations (`812.00us`, `1.02ms`, `10.01s`, `1.50m`) in milliseconds.
fn duration_ms(s: &str) -> anyhow::Result<f64> {
    let split = s
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| anyhow!("`{s}` has no unit"))?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().with_context(|| format!("`{s}`"))?;
    let scale = match unit {
        "us" => 0.001,
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        _ => bail!("`{s}`: unknown unit"),
    };
    Ok(n * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_report_of_wrk_4() {
        let out = "Running 10s test @ http://127.0.0.1:41234/api/agent/v1/accounts
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.10ms    5.31ms  98.23ms   97.10%
    Req/Sec     5.12k   510.20     6.01k    72.00%
  Latency Distribution
     50%  812.00us
     75%    1.53ms
     90%    2.40ms
     99%   30.12ms
  102345 requests in 10.01s, 250.12MB read
  Socket errors: connect 0, read 0, write 0, timeout 3
  Non-2xx or 3xx responses: 12
Requests/sec:  10224.50
Transfer/sec:     24.99MB
";
        let run = parse(out).unwrap();
        assert_eq!(run.requests, 102_345);
        assert!((run.seconds - 10.01).abs() < 1e-9);
        assert!((run.rps - 10_224.5).abs() < 1e-9);
        assert!((run.p50_ms - 0.812).abs() < 1e-9);
        assert!((run.p90_ms - 2.4).abs() < 1e-9);
        assert!((run.p99_ms - 30.12).abs() < 1e-9);
        assert!((run.max_ms - 98.23).abs() < 1e-9);
        assert_eq!(run.non_2xx, 12);
        assert_eq!(
            run.socket_errors.as_deref(),
            Some("Socket errors: connect 0, read 0, write 0, timeout 3")
        );
    }

    #[test]
    fn a_report_without_figures_is_an_error() {
        assert!(parse("unable to connect to 127.0.0.1:1 Connection refused\n").is_err());
        assert!(duration_ms("12").is_err());
        assert!(duration_ms("1.5m").unwrap() == 90_000.0);
    }
}
