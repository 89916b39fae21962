//! `fleetdesk upload FILE --code CODE`: a person's (or a script's) upload of an image or a
//! video of up to 500 MB through the public Agent API, with the agent key from
//! `FLEETDESK_AGENT_KEY`. A video over 4 MB goes in chunks of the size the service names, in
//! order; interrupted, the same command resumes: `POST /uploads` is sent with an
//! Idempotency-Key made from the file's content and the account, so the service answers with
//! the same upload, and resending chunk 0 answers where it stands (`next_chunk`).

use std::io::{IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::Path;
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
}

/// Reads `2M`, `500K`, `1G` or a plain number of bytes per second.
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

/// A JSON answer.
async fn read_json<T: serde::de::DeserializeOwned>(res: reqwest::Response) -> anyhow::Result<T> {
    let bytes = res
        .bytes()
        .await
        .map_err(|e| anyhow::anyhow!("reading the answer: {}", e.without_url()))?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// The service's error as it says it (`{code, message}`), never the key.
async fn refused(what: &str, res: reqwest::Response) -> anyhow::Error {
    let status = res.status().as_u16();
    let body: Value = read_json(res).await.unwrap_or(Value::Null);
    let message = body["message"].as_str().unwrap_or("no message");
    let code = body["code"].as_str().unwrap_or("error");
    anyhow::anyhow!("{what}: the service answered {status} {code}: {message}")
}

/// A progress line on stderr: redrawn in place on a terminal, one line per step otherwise.
struct Bar {
    total: u64,
    tty: bool,
    started: Instant,
}

impl Bar {
    fn show(&self, sent: u64) {
        let pct = (sent * 100).checked_div(self.total).unwrap_or(100);
        let filled = (pct / 5) as usize;
        let mb = |b: u64| b as f64 / (1 << 20) as f64;
        let secs = self.started.elapsed().as_secs_f64().max(0.001);
        let line = format!(
            "[{}{}] {pct:>3}% {:.1}/{:.1} MB {:.1} MB/s",
            "#".repeat(filled),
            ".".repeat(20 - filled),
            mb(sent),
            mb(self.total),
            mb(sent) / secs,
        );
        let mut err = std::io::stderr();
        if self.tty {
            let _ = write!(err, "\r{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    fn finish(&self) {
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}

/// Uploads the file; prints `{upload_id, media_id, bytes}` on stdout.
pub async fn run(args: UploadArgs) -> anyhow::Result<()> {
    let meta = std::fs::metadata(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let bytes = meta.len();
    let mut file = std::fs::File::open(&args.file)
        .with_context(|| format!("opening {}", args.file.display()))?;
    let mut head = vec![0u8; 512.min(bytes as usize)];
    file.read_exact(&mut head)?;
    let Some(media_type) = MediaType::sniff(&head) else {
        bail!(
            "{} is not an image or video the service takes (JPEG, PNG, WebP, MP4, MOV, WebM)",
            args.file.display()
        );
    };
    let key = idempotency_key(&args.file, &args.code, args.platform.as_deref())?;
    let base = args.url.trim_end_matches('/');
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .context("the HTTP client")?;
    let mut body = json!({"code": args.code, "bytes": bytes, "mime_type": media_type.mime()});
    if let Some(p) = &args.platform {
        body["platform"] = json!(p);
    }
    if let Some(c) = &args.caption {
        body["caption"] = json!(c);
    }
    let res = client
        .post(format!("{base}/api/agent/v1/uploads"))
        .bearer_auth(&args.key)
        .header("Idempotency-Key", &key)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| anyhow::anyhow!("reaching the service: {}", e.without_url()))?;
    if !res.status().is_success() {
        return Err(refused("creating the upload", res).await);
    }
    let plan: Plan = read_json(res).await.context("the service's upload plan")?;
    let bar = Bar {
        total: bytes,
        tty: std::io::stderr().is_terminal(),
        started: Instant::now(),
    };
    let media_id = if plan.mode == "chunked" {
        chunked(&client, &plan, &mut file, bytes, args.limit_rate, &bar).await?
    } else {
        let url = plan
            .upload_url
            .as_deref()
            .context("the plan names no upload_url")?;
        let mut all = Vec::with_capacity(bytes as usize);
        file.seek(SeekFrom::Start(0))?;
        file.read_to_end(&mut all)?;
        let res = client
            .put(url)
            .body(all)
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("sending the file: {}", e.without_url()))?;
        if !res.status().is_success() {
            return Err(refused("sending the file", res).await);
        }
        bar.show(bytes);
        let done: Progress = read_json(res).await.context("the service's answer")?;
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
    limit_rate: Option<u64>,
    bar: &Bar,
) -> anyhow::Result<Option<String>> {
    let url = plan
        .chunk_url
        .as_deref()
        .context("the plan names no chunk_url")?;
    let size = plan.chunk_bytes.context("the plan names no chunk_bytes")?;
    let chunks = plan.chunks.context("the plan names no chunks")?;
    let started = Instant::now();
    let mut sent_now: u64 = 0;
    let mut n: u64 = 0;
    let mut first = true;
    while n < chunks {
        let offset = n * size;
        let len = size.min(bytes - offset);
        let mut chunk = vec![0u8; len as usize];
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(&mut chunk)?;
        let res = client
            // The link ends with `n=`: the chunk's index follows.
            .put(format!("{url}{n}"))
            .body(chunk)
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("sending chunk {n}: {}", e.without_url()))?;
        if !res.status().is_success() {
            return Err(refused(&format!("sending chunk {n}"), res).await);
        }
        let progress: Progress = read_json(res).await.context("the service's answer")?;
        if progress.done {
            bar.show(bytes);
            return Ok(progress.media_id);
        }
        let next = progress.next_chunk.unwrap_or(n + 1);
        if first && next > 1 {
            // Chunk 0 was there already: an earlier run got this far.
            let _ = writeln!(std::io::stderr(), "resuming at chunk {next} of {chunks}");
        }
        first = false;
        sent_now += if next > n { len } else { 0 };
        n = next.max(n + 1);
        bar.show((n * size).min(bytes));
        if let Some(rate) = limit_rate {
            let due = Duration::from_secs_f64(sent_now as f64 / rate as f64);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                tokio::time::sleep(wait).await;
            }
        }
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
}
