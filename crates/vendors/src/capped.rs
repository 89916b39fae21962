//! Reading another service's answer no further than a cap: a larger answer is refused once its
//! length says so, or once the bytes read pass the cap, never read whole first.

/// The body of `answer`, or `None` when it is larger than `cap` bytes: refused before reading
/// when its `Content-Length` says so, else reading stops at the first chunk past the cap (the
/// rest is never read).
pub(crate) async fn read_capped(
    mut answer: reqwest::Response,
    cap: usize,
) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if answer
        .content_length()
        .is_some_and(|n| n > u64::try_from(cap).unwrap_or(u64::MAX))
    {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = answer.chunk().await? {
        if bytes.len() + chunk.len() > cap {
            return Ok(None);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

/// A fake service on a local port for the adapters' tests.
#[cfg(test)]
pub(crate) mod fake {
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// How the fake sends its answer's body.
    #[derive(Debug, Clone)]
    pub enum Body {
        /// These bytes with their `Content-Length`.
        Sized(Vec<u8>),
        /// These bytes chunked, without a length.
        Chunked(Vec<u8>),
        /// Chunks of this many spaces without end, without a length.
        Endless(usize),
    }

    /// Serves every request with `status` and `body`; returns the base URL and the requests
    /// seen (head and body as text).
    pub async fn serve(status: u16, body: Body) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let request = read_request(&mut socket).await;
                log.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&request).to_string());
                let body = body.clone();
                tokio::spawn(async move {
                    let head = |framing: String| {
                        format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                             {framing}\r\nconnection: close\r\n\r\n"
                        )
                    };
                    match body {
                        Body::Sized(bytes) => {
                            let head = head(format!("content-length: {}", bytes.len()));
                            let _ = socket.write_all(head.as_bytes()).await;
                            let _ = socket.write_all(&bytes).await;
                        }
                        Body::Chunked(bytes) => {
                            let head = head("transfer-encoding: chunked".into());
                            let _ = socket.write_all(head.as_bytes()).await;
                            for part in bytes.chunks(64 * 1024) {
                                let size = format!("{:x}\r\n", part.len());
                                let _ = socket.write_all(size.as_bytes()).await;
                                let _ = socket.write_all(part).await;
                                let _ = socket.write_all(b"\r\n").await;
                            }
                            let _ = socket.write_all(b"0\r\n\r\n").await;
                        }
                        Body::Endless(size) => {
                            let head = head("transfer-encoding: chunked".into());
                            let _ = socket.write_all(head.as_bytes()).await;
                            let chunk = format!("{size:x}\r\n{}\r\n", " ".repeat(size));
                            while socket.write_all(chunk.as_bytes()).await.is_ok() {}
                        }
                    }
                    let _ = socket.shutdown().await;
                });
            }
        });
        (base, seen)
    }

    /// The request's head, then its body of the length the head gives.
    async fn read_request(socket: &mut tokio::net::TcpStream) -> Vec<u8> {
        let mut request = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = socket.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                return request;
            }
            request.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&request).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    return request;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::{Body, serve};
    use super::*;

    async fn read(body: Body, cap: usize) -> Option<Vec<u8>> {
        let (base, _) = serve(200, body).await;
        let answer = reqwest::get(&base).await.unwrap();
        read_capped(answer, cap).await.unwrap()
    }

    #[tokio::test]
    async fn an_answer_at_the_cap_is_read_and_one_byte_past_it_is_refused() {
        let cap = 100_000;
        for (framing, body) in [
            ("sized", Body::Sized as fn(Vec<u8>) -> Body),
            ("chunked", Body::Chunked),
        ] {
            let at = read(body(vec![b'a'; cap]), cap).await;
            assert_eq!(at.map(|b| b.len()), Some(cap), "{framing}");
            assert_eq!(
                read(body(vec![b'a'; cap + 1]), cap).await,
                None,
                "{framing}"
            );
        }
    }

    #[tokio::test]
    async fn reading_an_endless_answer_stops_past_the_cap() {
        // Without a length, and without an end: the reader gives up a chunk past the cap.
        assert_eq!(read(Body::Endless(4096), 64 * 1024).await, None);
    }
}
