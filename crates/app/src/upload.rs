//! `fleetdesk upload FILE --code CODE`: a person's (or a script's) upload of an image or a
//! video of up to 500 MB through the public Agent API, with the agent key from
//! `FLEETDESK_AGENT_KEY`. A video over 4 MB goes in chunks of the size the service names, in
//! order; interrupted, the same command resumes: `POST /uploads` is sent with an
//! Idempotency-Key made from the file's content and the account, so the service answers with
//! the same upload, and resending chunk 0 answers where it stands (`next_chunk`).

use std::io::{IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use fleetdesk_kernel::media::MediaType;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What the command is told.
#[derive(Debug, Clone)]
pub struct UploadArgs {
    pub file: std::path::PathBuf,
    pub code: String,
    pub platform: Option<String>,
    pub caption: Option<String>,
    /// The service's base URL.
    pub url: String,
    /// The agent key (`FLEETDESK_AGENT_KEY`).
    pub key: String,
    /// Bytes per second at most; none when absent.
    pub limit_rate: Option<u64>,
}

/// What the service answered about the upload.
#[derive(Debug, Deserialize)]
struct Plan {
    upload_id: String,
    mode: String,
    upload_url: Option<String>,
    chunk_url: Option<String>,
    chunk_bytes: Option<u64>,
    chunks: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Progress {
    media_id: Option<String>,
    next_chunk: Option<u64>,
    #[serde(default)]
    done: bool,
    /// A single upload: the library held the same file already.
    #[serde(default)]
    duplicate: bool,
}

/// Reads `2M`, `500K`, `1G` or a plain number of bytes per second (binary units: `1M` is
/// 1 MiB).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&text[..i], c.to_ascii_uppercase()),
        _ => (text, 'B'),
    };
    let n: u64 = digits.parse().map_err(|_| {
        format!("{text:?} is not a rate: a number of bytes per second, or with K, M or G")
    })?;
    let factor = match unit {
        'B' => 1,
        'K' => 1 << 10,
        'M' => 1 << 20,
        'G' => 1 << 30,
        _ => return Err(format!("{text:?}: the unit is K, M or G")),
    };
    n.checked_mul(factor)
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{text:?} is not a rate above zero"))
}

/// The key that makes a second run of the same upload the same upload: the file's content,
/// the account and the platform.
fn idempotency_key(file: &Path, code: &str, platform: Option<&str>) -> anyhow::Result<String> {
    let mut f = std::fs::File::open(file)?;
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
    }
    hash.update(b"\0");
    hash.update(code.trim().to_uppercase().as_bytes());
    hash.update(b"\0");
    hash.update(platform.unwrap_or_default().as_bytes());
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("cli-upload-{}", &hex[..40]))
}

/// Why a request failed, every cause of it (`error sending request: client error (Connect):
/// tcp connect error: Connection refused`), never its URL (an upload link carries a token).
fn why(e: reqwest::Error) -> String {
    let e = e.without_url();
    if e.is_timeout() {
        return "the service did not answer in time".to_owned();
    }
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.join(": ")
}

/// What to do after a failure that rerunning mends.
const RERUN: &str = "run the same command again to resume";

/// A JSON answer.
async fn read_json<T: serde::de::DeserializeOwned>(res: reqwest::Response) -> anyhow::Result<T> {
    let bytes = res
        .bytes()
        .await
        .map_err(|e| anyhow::anyhow!("reading the answer failed: {}; {RERUN}", why(e)))?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// The service's error as it says it (`{code, message}`), never the key; a failure of the
/// service (5xx) says that rerunning resumes.
async fn refused(what: &str, res: reqwest::Response) -> anyhow::Error {
    let status = res.status().as_u16();
    let body: Value = read_json(res).await.unwrap_or(Value::Null);
    let message = body["message"].as_str().unwrap_or("no message");
    let code = body["code"].as_str().unwrap_or("error");
    let then = if status >= 500 {
        format!("; {RERUN}")
    } else {
        String::new()
    };
    anyhow::anyhow!("{what}: the service answered {status} {code}: {message}{then}")
}

/// The pace of `--limit-rate`: a token bucket of `rate` bytes a second holding at most a
/// twentieth of a second's worth (at least one piece), so no burst goes past it, not only the
/// average.
struct Pacer {
    rate: f64,
    capacity: f64,
    state: std::sync::Mutex<(f64, Instant)>,
}

/// The bytes a body is cut into when paced.
const PIECE: usize = 16 << 10;

impl Pacer {
    fn new(rate: u64) -> Pacer {
        let rate = rate as f64;
        let capacity = (rate / 20.0).max(PIECE as f64);
        Pacer {
            rate,
            capacity,
            state: std::sync::Mutex::new((capacity, Instant::now())),
        }
    }

    /// How long to wait before sending `n` more bytes (the bucket is charged now).
    fn charge(&self, n: usize) -> Duration {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, last) = &mut *state;
        let now = Instant::now();
        *tokens =
            (*tokens + now.duration_since(*last).as_secs_f64() * self.rate).min(self.capacity);
        *last = now;
        *tokens -= n as f64;
        if *tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-*tokens / self.rate)
        }
    }
}

/// A request body: the bytes at once, or in pieces released at the pacer's rate.
fn body(data: Vec<u8>, pacer: Option<&Arc<Pacer>>) -> reqwest::Body {
    let Some(pacer) = pacer.cloned() else {
        return reqwest::Body::from(data);
    };
    let data = bytes::Bytes::from(data);
    let pieces = futures_util::stream::unfold(0usize, move |at| {
        let (data, pacer) = (data.clone(), pacer.clone());
        async move {
            if at >= data.len() {
                return None;
            }
            let end = (at + PIECE).min(data.len());
            tokio::time::sleep(pacer.charge(end - at)).await;
            Some((Ok::<_, std::io::Error>(data.slice(at..end)), end))
        }
    });
    reqwest::Body::wrap_stream(pieces)
}

/// A progress line on stderr: redrawn in place on a terminal, one line per step otherwise.
/// The rate is that of the bytes this run sent and the service took, over the time their
/// requests took; none when the run sent nothing new (a resend answers where the upload
/// stands, or the service held the file already).
struct Bar {
    total: u64,
    tty: bool,
}

/// Bytes in MiB, one decimal.
fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1 << 20) as f64)
}

impl Bar {
    fn show(&self, done: u64, taken: u64, busy: Duration) {
        let pct = (done * 100).checked_div(self.total).unwrap_or(100);
        let filled = (pct / 5) as usize;
        let mut line = format!(
            "[{}{}] {pct:>3}% {}/{} MiB",
            "#".repeat(filled),
            ".".repeat(20 - filled),
            mib(done),
            mib(self.total),
        );
        if taken > 0 {
            let secs = busy.as_secs_f64().max(0.001);
            line.push_str(&format!(" {} MiB/s", mib((taken as f64 / secs) as u64)));
        }
        let mut err = std::io::stderr();
        if self.tty {
            let _ = write!(err, "\r{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    fn note(&self, text: &str) {
        let mut err = std::io::stderr();
        let _ = writeln!(err, "{}{text}", if self.tty { "\n" } else { "" });
    }

    fn finish(&self) {
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// Uploads the file; prints `{upload_id, media_id, bytes}` on stdout.
pub async fn run(args: UploadArgs) -> anyhow::Result<()> {
    let shown = args.file.display();
    let meta = std::fs::metadata(&args.file).with_context(|| format!("reading {shown}"))?;
    if !meta.is_file() {
        bail!("{shown} is not a file");
    }
    let bytes = meta.len();
    let mut file = std::fs::File::open(&args.file).with_context(|| format!("opening {shown}"))?;
    let mut head = vec![0u8; 512.min(bytes as usize)];
    file.read_exact(&mut head)
        .with_context(|| format!("reading {shown}"))?;
    let Some(media_type) = MediaType::sniff(&head) else {
        bail!(
            "{shown} is not an image or video the service takes (JPEG, PNG, WebP, MP4, MOV, WebM)"
        );
    };
    let key = idempotency_key(&args.file, &args.code, args.platform.as_deref())
        .with_context(|| format!("reading {shown}"))?;
    let base = args.url.trim_end_matches('/');
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .context("the HTTP client")?;
    let mut body_json = json!({"code": args.code, "bytes": bytes, "mime_type": media_type.mime()});
    if let Some(p) = &args.platform {
        body_json["platform"] = json!(p);
    }
    if let Some(c) = &args.caption {
        body_json["caption"] = json!(c);
    }
    let res = client
        .post(format!("{base}/api/agent/v1/uploads"))
        .bearer_auth(&args.key)
        .header("Idempotency-Key", &key)
        .header("content-type", "application/json")
        .body(body_json.to_string())
        .send()
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "could not reach the service at --url {base}: {}; is it running?",
                why(e)
            )
        })?;
    if !res.status().is_success() {
        return Err(refused("creating the upload", res).await);
    }
    let plan: Plan = read_json(res).await.context("the service's upload plan")?;
    let bar = Bar {
        total: bytes,
        tty: std::io::stderr().is_terminal(),
    };
    let pacer = args.limit_rate.map(|rate| Arc::new(Pacer::new(rate)));
    let media_id = if plan.mode == "chunked" {
        chunked(&client, &plan, &mut file, bytes, pacer.as_ref(), &bar).await?
    } else {
        let url = plan
            .upload_url
            .as_deref()
            .context("the plan names no upload_url")?;
        let mut all = Vec::with_capacity(bytes as usize);
        file.seek(SeekFrom::Start(0))?;
        file.read_to_end(&mut all)
            .with_context(|| format!("reading {shown}"))?;
        let started = Instant::now();
        let res = client
            .put(url)
            .body(body(all, pacer.as_ref()))
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("sending the file failed: {}; {RERUN}", why(e)))?;
        if !res.status().is_success() {
            return Err(refused("sending the file", res).await);
        }
        let done: Progress = read_json(res).await.context("the service's answer")?;
        if done.duplicate {
            bar.show(bytes, 0, started.elapsed());
            bar.note("the library holds this file already");
        } else {
            bar.show(bytes, bytes, started.elapsed());
        }
        done.media_id
    };
    bar.finish();
    let media_id = media_id.context("the service finished the upload without a media_id")?;
    println!(
        "{}",
        json!({"upload_id": plan.upload_id, "media_id": media_id, "bytes": bytes})
    );
    Ok(())
}

/// The chunks in order from where the service stands; answers the media id.
async fn chunked(
    client: &reqwest::Client,
    plan: &Plan,
    file: &mut std::fs::File,
    bytes: u64,
    pacer: Option<&Arc<Pacer>>,
    bar: &Bar,
) -> anyhow::Result<Option<String>> {
    let url = plan
        .chunk_url
        .as_deref()
        .context("the plan names no chunk_url")?;
    let size = plan.chunk_bytes.context("the plan names no chunk_bytes")?;
    let chunks = plan.chunks.context("the plan names no chunks")?;
    // The bytes this run sent that the service took, and how long their requests took.
    let (mut taken, mut busy) = (0u64, Duration::ZERO);
    let mut n: u64 = 0;
    let mut first = true;
    while n < chunks {
        let offset = n * size;
        let len = size.min(bytes - offset);
        let mut chunk = vec![0u8; len as usize];
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(&mut chunk)?;
        let started = Instant::now();
        let res = client
            // The link ends with `n=`: the chunk's index follows.
            .put(format!("{url}{n}"))
            .body(body(chunk, pacer))
            .send()
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "sending chunk {} of {chunks} failed: {}; {RERUN} from that chunk",
                    n + 1,
                    why(e)
                )
            })?;
        if !res.status().is_success() {
            return Err(refused(&format!("sending chunk {} of {chunks}", n + 1), res).await);
        }
        let progress: Progress = read_json(res).await.context("the service's answer")?;
        let next = progress.next_chunk.unwrap_or(n + 1);
        // A resend answers where the upload stands: those bytes were there already.
        let took = if progress.done {
            !first || chunks == 1
        } else {
            next == n + 1
        };
        if took {
            taken += len;
            busy += started.elapsed();
        }
        if progress.done {
            bar.show(bytes, taken, busy);
            if taken == 0 {
                bar.note("the service holds this file already");
            }
            return Ok(progress.media_id);
        }
        if first && next > 1 {
            // Chunk 0 was there already: an earlier run got this far.
            bar.note(&format!("resuming at chunk {next} of {chunks}"));
        }
        first = false;
        n = next.max(n + 1);
        bar.show((n * size).min(bytes), taken, busy);
    }
    bail!("every chunk was sent but the service did not say the upload is done")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_with_their_unit() {
        assert_eq!(parse_rate("2M"), Ok(2 << 20));
        assert_eq!(parse_rate("500k"), Ok(500 << 10));
        assert_eq!(parse_rate("1024"), Ok(1024));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("2X").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn the_pacer_lets_a_twentieth_of_a_second_through_then_keeps_the_rate() {
        let pacer = Pacer::new(1 << 20);
        // 52 KiB may go at once (1 MiB / 20), the next piece waits for its bytes.
        for _ in 0..3 {
            assert_eq!(pacer.charge(PIECE), Duration::ZERO);
        }
        let wait = pacer.charge(PIECE);
        let expected = (4.0 * PIECE as f64 - (1 << 20) as f64 / 20.0) / (1 << 20) as f64;
        assert!(
            (wait.as_secs_f64() - expected).abs() < 0.005,
            "{wait:?} against {expected}"
        );
        // A long pause saves no more than the bucket holds.
        let slow = Pacer::new(PIECE as u64);
        assert_eq!(slow.charge(PIECE), Duration::ZERO);
        let wait = slow.charge(PIECE);
        assert!(wait > Duration::from_millis(990), "{wait:?}");
    }

    #[test]
    fn sizes_are_shown_in_mib() {
        assert_eq!(mib(3 << 20), "3.0");
        assert_eq!(mib(1_572_864), "1.5");
    }
}
