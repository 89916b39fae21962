//! What operators measure: the Prometheus registry and its metric families, shared by both
//! transports through [`Ctx`](crate::Ctx). The HTTP middleware and the MCP adapter record each
//! call ([`Telemetry::call`]), the upload route the bytes it received, the worker its job runs;
//! the pool's use and the job queue are read when the metrics listener is scraped
//! ([`Telemetry::render`]). Every label value comes from a fixed set (operation ids of the
//! catalogue, the names in [`route`], statuses, error codes, job kinds): never a raw path, a
//! key or anything a caller typed.

use fleetdesk_kernel::ErrorCode;
use fleetdesk_kernel::health::{JobCounts, PoolUse};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry, Unit};
use std::sync::Arc;
use std::time::Duration;

/// The `operation` of what is not a catalogue operation: a small fixed set.
pub mod route {
    /// `/healthz`, `/readyz`.
    pub const HEALTH: &str = "health";
    /// The signed media and persona links.
    pub const FILES: &str = "files";
    /// `/`, `/docs` and its script.
    pub const DOCS: &str = "docs";
    /// `/openapi.json`, `/openapi-agent.json`.
    pub const OPENAPI: &str = "openapi";
    /// MCP methods other than `tools/call` of a known tool (initialize, tools/list, ping,
    /// notifications, refused messages).
    pub const MCP: &str = "mcp";
    /// Anything else: unknown paths (404) and methods a path does not take (405).
    pub const OTHER: &str = "other";
}

/// How a call arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// REST and the other HTTP routes.
    Http,
    /// An MCP message on `/api/mcp`.
    Mcp,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Mcp => "mcp",
        }
    }
}

/// One call as recorded: its operation (a catalogue operation id or a [`route`] name), the
/// status it was answered with, the error code of an error answer, and whether it was a replay.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub transport: Transport,
    pub operation: &'a str,
    pub status: u16,
    pub error_code: Option<&'a str>,
    pub replayed: bool,
    pub elapsed: Duration,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    transport: &'static str,
    operation: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    transport: &'static str,
    operation: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransportLabels {
    transport: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConflictLabels {
    transport: &'static str,
    code: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UploadLabels {
    operation: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    kind: String,
    status: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

/// Latency buckets in seconds: 5 ms to 30 s (an upload chunk on a slow link).
const LATENCY_BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// Registers `metric` (sharing its values with the registry) and hands it back.
fn register<M: Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    unit: Option<Unit>,
    metric: M,
) -> M {
    match unit {
        Some(unit) => registry.register_with_unit(name, help, unit, metric.clone()),
        None => registry.register(name, help, metric.clone()),
    }
    metric
}

struct Inner {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<OperationLabels, Histogram, fn() -> Histogram>,
    rate_limited: Family<TransportLabels, Counter>,
    replays: Family<TransportLabels, Counter>,
    conflicts: Family<ConflictLabels, Counter>,
    upload_bytes: Family<UploadLabels, Counter>,
    pool_max: Gauge,
    pool_size: Gauge,
    pool_available: Gauge,
    pool_waiting: Gauge,
    jobs: Family<JobLabels, Gauge>,
    job_runs: Family<KindLabels, Counter>,
    job_failures: Family<KindLabels, Counter>,
}

/// The metrics of one process. Cloning shares them.
#[derive(Clone)]
pub struct Telemetry {
    inner: Arc<Inner>,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry::new()
    }
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Telemetry")
    }
}

/// The content type of [`Telemetry::render`]: OpenMetrics text, which Prometheus reads.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

impl Telemetry {
    pub fn new() -> Telemetry {
        let mut registry = Registry::default();
        let r = &mut registry;
        let inner = Inner {
            requests: register(
                r,
                "fleetdesk_requests",
                "Calls answered, by transport, operation and status",
                None,
                Family::default(),
            ),
            latency: register(
                r,
                "fleetdesk_request_duration",
                "Time to answer a call, by transport and operation",
                Some(Unit::Seconds),
                Family::new_with_constructor(latency_histogram as fn() -> Histogram),
            ),
            rate_limited: register(
                r,
                "fleetdesk_rate_limited",
                "Calls refused for the key's rate limit (429 rate_limited)",
                None,
                Family::default(),
            ),
            replays: register(
                r,
                "fleetdesk_idempotency_replays",
                "Calls answered from the stored result of their Idempotency-Key (Idempotent-Replayed)",
                None,
                Family::default(),
            ),
            conflicts: register(
                r,
                "fleetdesk_idempotency_conflicts",
                "Calls refused for their Idempotency-Key: 409 idempotency_in_progress, 422 idempotency_mismatch",
                None,
                Family::default(),
            ),
            upload_bytes: register(
                r,
                "fleetdesk_upload",
                "Bytes received by the upload PUTs (file, chunk, poster), by operation",
                Some(Unit::Bytes),
                Family::default(),
            ),
            pool_max: register(
                r,
                "fleetdesk_db_pool_max_size",
                "Database connections the pool may open",
                None,
                Gauge::default(),
            ),
            pool_size: register(
                r,
                "fleetdesk_db_pool_size",
                "Database connections the pool holds open",
                None,
                Gauge::default(),
            ),
            pool_available: register(
                r,
                "fleetdesk_db_pool_available",
                "Open database connections not in use",
                None,
                Gauge::default(),
            ),
            pool_waiting: register(
                r,
                "fleetdesk_db_pool_waiting",
                "Requests waiting for a database connection",
                None,
                Gauge::default(),
            ),
            jobs: register(
                r,
                "fleetdesk_jobs",
                "Background jobs in the queue by kind and status (queued, running, failed), read at scrape time",
                None,
                Family::default(),
            ),
            job_runs: register(
                r,
                "fleetdesk_job_runs",
                "Background jobs this instance ran, by kind",
                None,
                Family::default(),
            ),
            job_failures: register(
                r,
                "fleetdesk_job_failures",
                "Background job runs of this instance that failed, by kind",
                None,
                Family::default(),
            ),
            registry,
        };
        Telemetry {
            inner: Arc::new(inner),
        }
    }

    /// Records one answered call: its count and latency, and a rate-limit refusal, an
    /// idempotency conflict or a replay when it was one.
    pub fn call(&self, call: Call<'_>) {
        let m = &self.inner;
        let transport = call.transport.as_str();
        m.requests
            .get_or_create(&RequestLabels {
                transport,
                operation: call.operation.to_owned(),
                status: call.status,
            })
            .inc();
        m.latency
            .get_or_create(&OperationLabels {
                transport,
                operation: call.operation.to_owned(),
            })
            .observe(call.elapsed.as_secs_f64());
        if call.replayed {
            m.replays
                .get_or_create(&TransportLabels { transport })
                .inc();
        }
        match call.error_code {
            Some(code) if code == ErrorCode::RateLimited.as_str() => {
                m.rate_limited
                    .get_or_create(&TransportLabels { transport })
                    .inc();
            }
            Some(code) => {
                let conflict = [
                    ErrorCode::IdempotencyInProgress,
                    ErrorCode::IdempotencyMismatch,
                ]
                .into_iter()
                .find(|c| c.as_str() == code);
                if let Some(c) = conflict {
                    m.conflicts
                        .get_or_create(&ConflictLabels {
                            transport,
                            code: c.as_str(),
                        })
                        .inc();
                }
            }
            None => {}
        }
    }

    /// Bytes an upload PUT received (`operation`: the PUT's operation id).
    pub fn upload_received(&self, operation: &str, bytes: usize) {
        self.inner
            .upload_bytes
            .get_or_create(&UploadLabels {
                operation: operation.to_owned(),
            })
            .inc_by(bytes as u64);
    }

    /// A background job of `kind` this instance ran, and whether it failed.
    pub fn job_ran(&self, kind: &str, failed: bool) {
        let labels = KindLabels {
            kind: kind.to_owned(),
        };
        self.inner.job_runs.get_or_create(&labels).inc();
        if failed {
            self.inner.job_failures.get_or_create(&labels).inc();
        }
    }

    /// The exposition ([`CONTENT_TYPE`]), with the pool's use and the job queue as read now
    /// (`jobs` is `None` when the queue could not be read: its gauges are left out).
    pub fn render(&self, pool: PoolUse, jobs: Option<&[JobCounts]>) -> String {
        let m = &self.inner;
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        m.pool_max.set(count(pool.max_size));
        m.pool_size.set(count(pool.size));
        m.pool_available.set(count(pool.available));
        m.pool_waiting.set(count(pool.waiting));
        m.jobs.clear();
        for kind in jobs.unwrap_or_default() {
            for (status, n) in [
                ("queued", kind.queued),
                ("running", kind.running),
                ("failed", kind.failed),
            ] {
                m.jobs
                    .get_or_create(&JobLabels {
                        kind: kind.kind.clone(),
                        status,
                    })
                    .set(n);
            }
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &m.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call<'a>(
        operation: &'a str,
        status: u16,
        error_code: Option<&'a str>,
        replayed: bool,
    ) -> Call<'a> {
        Call {
            transport: Transport::Http,
            operation,
            status,
            error_code,
            replayed,
            elapsed: Duration::from_millis(30),
        }
    }

    fn line<'a>(text: &'a str, start: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(start))
    }

    #[test]
    fn calls_are_counted_by_operation_and_status_with_their_latency() {
        let t = Telemetry::new();
        for _ in 0..3 {
            t.call(call("agent GET /accounts", 200, None, false));
        }
        t.call(call("agent GET /accounts", 404, Some("not_found"), false));
        let text = t.render(PoolUse::default(), None);
        assert_eq!(
            line(
                &text,
                "fleetdesk_requests_total{transport=\"http\",operation=\"agent GET /accounts\",status=\"200\"}"
            ),
            Some(
                "fleetdesk_requests_total{transport=\"http\",operation=\"agent GET /accounts\",status=\"200\"} 3"
            ),
            "{text}"
        );
        assert!(
            text.contains("fleetdesk_request_duration_seconds_count{transport=\"http\",operation=\"agent GET /accounts\"} 4"),
            "{text}"
        );
        // 30 ms falls in the 0.05 s bucket, not the 0.025 one.
        assert!(
            text.contains("fleetdesk_request_duration_seconds_bucket{le=\"0.05\",transport=\"http\",operation=\"agent GET /accounts\"} 4"),
            "{text}"
        );
        assert!(
            text.contains("fleetdesk_request_duration_seconds_bucket{le=\"0.025\",transport=\"http\",operation=\"agent GET /accounts\"} 0"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn refusals_and_replays_are_counted_from_the_error_code_and_the_replay_flag() {
        let t = Telemetry::new();
        t.call(call("op", 429, Some("rate_limited"), false));
        t.call(call("op", 429, Some("rate_limited"), false));
        t.call(call("op", 409, Some("idempotency_in_progress"), false));
        t.call(call("op", 422, Some("idempotency_mismatch"), false));
        t.call(call("op", 409, Some("ambiguous_code"), false));
        t.call(call("op", 200, None, true));
        let text = t.render(PoolUse::default(), None);
        for expected in [
            "fleetdesk_rate_limited_total{transport=\"http\"} 2",
            "fleetdesk_idempotency_conflicts_total{transport=\"http\",code=\"idempotency_in_progress\"} 1",
            "fleetdesk_idempotency_conflicts_total{transport=\"http\",code=\"idempotency_mismatch\"} 1",
            "fleetdesk_idempotency_replays_total{transport=\"http\"} 1",
        ] {
            assert!(text.lines().any(|l| l == expected), "{expected}\n{text}");
        }
        assert!(!text.contains("ambiguous_code"), "{text}");
    }

    #[test]
    fn the_pool_and_the_queue_are_what_the_scrape_read() {
        let t = Telemetry::new();
        let pool = PoolUse {
            max_size: 16,
            size: 5,
            available: 2,
            waiting: 0,
        };
        let queue = [JobCounts {
            kind: "weekly_reports".into(),
            queued: 2,
            running: 1,
            failed: 0,
        }];
        t.job_ran("weekly_reports", false);
        t.job_ran("weekly_reports", true);
        t.upload_received("agent PUT /uploads/{id}", 1000);
        t.upload_received("agent PUT /uploads/{id}", 24);
        let text = t.render(pool, Some(&queue));
        for expected in [
            "fleetdesk_db_pool_max_size 16",
            "fleetdesk_db_pool_size 5",
            "fleetdesk_db_pool_available 2",
            "fleetdesk_db_pool_waiting 0",
            "fleetdesk_jobs{kind=\"weekly_reports\",status=\"queued\"} 2",
            "fleetdesk_jobs{kind=\"weekly_reports\",status=\"running\"} 1",
            "fleetdesk_jobs{kind=\"weekly_reports\",status=\"failed\"} 0",
            "fleetdesk_job_runs_total{kind=\"weekly_reports\"} 2",
            "fleetdesk_job_failures_total{kind=\"weekly_reports\"} 1",
            "fleetdesk_upload_bytes_total{operation=\"agent PUT /uploads/{id}\"} 1024",
        ] {
            assert!(text.lines().any(|l| l == expected), "{expected}\n{text}");
        }
        // A queue that could not be read is left out, not shown stale.
        let text = t.render(pool, None);
        assert!(!text.contains("fleetdesk_jobs{"), "{text}");
    }
}
