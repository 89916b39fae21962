//! The one HTTP/1.1 client of the benchmarks: a keep-alive connection that a client thread
//! owns, and the request heads they send on it.
//!
//! Own code rather than a client crate because the benchmarks measure through it: each
//! client holds exactly one connection and the reports count how many times it connected
//! (a pool would reconnect, or retry an idempotent request on a stale connection, without
//! saying so, and a failed request must count as an error); a small request leaves in one
//! write (two writes with `TCP_NODELAY` would be two segments and a slower request); a chunk
//! of an upload is written straight from the caller's buffer; and the client's CPU, which
//! shares the machine's cores with the server and PostgreSQL, stays as small as it can be.
//! It reads what the server sends: `Content-Length`, chunked bodies and bodies up to the
//! close, plus the two headers the benchmarks read (`X-Db-Round-Trips`,
//! `Idempotent-Replayed`). The upload benchmark's sink and the events benchmark's webhook
//! receiver read requests with [`read_request_head`], the same header parser.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

/// What a benchmark reads of an answer.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    /// `X-Db-Round-Trips`: the SQL statements the request sent.
    pub round_trips: Option<u32>,
    /// `Idempotent-Replayed: true`.
    pub replayed: bool,
    pub body: Vec<u8>,
    /// The server closes the connection after this answer.
    pub close: bool,
}

/// A request rendered before it is sent, so that a measurement times only the exchange: the
/// head (with a small body, in one buffer) and a body written after it from its own buffer.
pub struct Request<'a> {
    head: Vec<u8>,
    body: &'a [u8],
}

/// The request line and headers of a [`Request`] being built.
pub struct Head(String);

impl Request<'_> {
    /// `method path HTTP/1.1` with `Host: host`.
    pub fn builder(method: &str, path: &str, host: &str) -> Head {
        Head(format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n"))
    }
}

impl Head {
    pub fn header(mut self, name: &str, value: &str) -> Head {
        let _ = write!(self.0, "{name}: {value}\r\n");
        self
    }

    pub fn bearer(self, key: &str) -> Head {
        self.header("Authorization", &format!("Bearer {key}"))
    }

    pub fn accept_json(self) -> Head {
        self.header("Accept", "application/json")
    }

    pub fn idempotency_key(self, key: Option<&str>) -> Head {
        match key {
            Some(k) => self.header("Idempotency-Key", k),
            None => self,
        }
    }

    /// No body and no `Content-Length`.
    pub fn empty(mut self) -> Request<'static> {
        self.0.push_str("\r\n");
        Request {
            head: self.0.into_bytes(),
            body: &[],
        }
    }

    /// A JSON body, in the same buffer as the head (one write).
    pub fn json(mut self, body: &str) -> Request<'static> {
        let _ = write!(
            self.0,
            "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        Request {
            head: self.0.into_bytes(),
            body: &[],
        }
    }

    /// A body written after the head straight from `body`, never copied.
    pub fn body<'a>(self, content_type: &str, body: &'a [u8]) -> Request<'a> {
        let mut head = self.header("Content-Type", content_type).0;
        let _ = write!(head, "Content-Length: {}\r\n\r\n", body.len());
        Request {
            head: head.into_bytes(),
            body,
        }
    }
}

/// A request to the agent or user API: a bearer key, `Accept: application/json`, an
/// `Idempotency-Key` when given and a JSON body when given.
pub fn api_request(
    host: &str,
    method: &str,
    path: &str,
    key: &str,
    idempotency_key: Option<&str>,
    body: Option<&str>,
) -> Request<'static> {
    let head = Request::builder(method, path, host)
        .bearer(key)
        .accept_json()
        .idempotency_key(idempotency_key);
    match body {
        Some(b) => head.json(b),
        None => head.empty(),
    }
}

/// One keep-alive connection, opened on the first request and again after the server closed
/// it or an exchange failed.
pub struct Connection {
    addr: String,
    read_timeout: Duration,
    conn: Option<(BufReader<TcpStream>, TcpStream)>,
    connects: u32,
}

impl Connection {
    pub fn new(addr: &str, read_timeout: Duration) -> Connection {
        Connection {
            addr: addr.to_owned(),
            read_timeout,
            conn: None,
            connects: 0,
        }
    }

    /// How many times it has connected.
    pub fn connects(&self) -> u32 {
        self.connects
    }

    pub fn send(&mut self, request: &Request<'_>) -> io::Result<Response> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(&self.addr)?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(self.read_timeout))?;
            let reader = BufReader::with_capacity(64 * 1024, stream.try_clone()?);
            self.conn = Some((reader, stream));
            self.connects += 1;
        }
        let (reader, writer) = self.conn.as_mut().expect("connected above");
        let mut result = writer.write_all(&request.head);
        if result.is_ok() && !request.body.is_empty() {
            result = writer.write_all(request.body);
        }
        let result = result.and_then(|()| read_response(reader));
        if !matches!(&result, Ok(r) if !r.close) {
            self.conn = None;
        }
        result
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_owned())
}

fn read_line(r: &mut impl BufRead, line: &mut String) -> io::Result<()> {
    line.clear();
    if r.read_line(line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the peer closed the connection",
        ));
    }
    Ok(())
}

/// Reads header lines up to the empty line and hands each name and value to `each`.
fn read_headers(
    r: &mut impl BufRead,
    line: &mut String,
    mut each: impl FnMut(&str, &str) -> io::Result<()>,
) -> io::Result<()> {
    loop {
        read_line(r, line)?;
        let l = line.trim_end();
        if l.is_empty() {
            return Ok(());
        }
        let Some((name, value)) = l.split_once(':') else {
            return Err(bad("malformed header"));
        };
        each(name.trim(), value.trim())?;
    }
}

pub fn read_response(r: &mut impl BufRead) -> io::Result<Response> {
    let mut line = String::new();
    read_line(r, &mut line)?;
    let mut parts = line.split_whitespace();
    let version = parts.next().unwrap_or("").to_owned();
    if !version.starts_with("HTTP/1.") {
        return Err(bad("not an HTTP/1.x status line"));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status code"))?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut round_trips = None;
    let mut replayed = false;
    let mut close = version == "HTTP/1.0";
    read_headers(r, &mut line, |name, value| {
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse().map_err(|_| bad("bad Content-Length"))?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        } else if name.eq_ignore_ascii_case("x-db-round-trips") {
            round_trips = value.parse().ok();
        } else if name.eq_ignore_ascii_case("idempotent-replayed") {
            replayed = value.eq_ignore_ascii_case("true");
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
        Ok(())
    })?;
    let body = if chunked {
        let mut body = Vec::new();
        loop {
            read_line(r, &mut line)?;
            let size = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                // Trailers, then the empty line.
                read_headers(r, &mut line, |_, _| Ok(()))?;
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            read_line(r, &mut line)?;
        }
        body
    } else if let Some(n) = length {
        let mut body = vec![0; n];
        r.read_exact(&mut body)?;
        body
    } else if status == 204 || status == 304 || status < 200 {
        Vec::new()
    } else {
        close = true;
        let mut body = Vec::new();
        r.read_to_end(&mut body)?;
        body
    };
    Ok(Response {
        status,
        round_trips,
        replayed,
        body,
        close,
    })
}

/// Reads a request's line and headers (an empty line before the request line is skipped) and
/// returns its `Content-Length` (0 without one); `None` when the peer closed the connection
/// before a request.
pub fn read_request_head(r: &mut impl BufRead) -> io::Result<Option<u64>> {
    read_request_head_with(r, |_, _| {})
}

/// [`read_request_head`] that also hands every header's name and value to `each` (the events
/// benchmark's webhook receiver reads `webhook-id`).
pub fn read_request_head_with(
    r: &mut impl BufRead,
    mut each: impl FnMut(&str, &str),
) -> io::Result<Option<u64>> {
    let mut line = String::new();
    for _ in 0..2 {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        if !line.trim_end().is_empty() {
            break;
        }
    }
    let mut length = 0;
    read_headers(r, &mut line, |name, value| {
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().map_err(|_| bad("bad Content-Length"))?;
        }
        each(name, value);
        Ok(())
    })?;
    Ok(Some(length))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::thread;

    fn parse(raw: &str) -> io::Result<Response> {
        read_response(&mut io::Cursor::new(raw.as_bytes().to_vec()))
    }

    #[test]
    fn an_api_request_is_one_buffer_with_its_headers_in_order() {
        let r = api_request("h:1", "POST", "/p", "k", Some("i"), Some("{}"));
        assert_eq!(
            String::from_utf8(r.head).unwrap(),
            "POST /p HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer k\r\n\
             Accept: application/json\r\nIdempotency-Key: i\r\n\
             Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        );
        assert!(r.body.is_empty());
        let r = api_request("h:1", "GET", "/p", "k", None, None);
        assert_eq!(
            String::from_utf8(r.head).unwrap(),
            "GET /p HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer k\r\nAccept: application/json\r\n\r\n"
        );
    }

    #[test]
    fn a_streamed_body_is_not_copied_into_the_head() {
        let chunk = [7u8; 5];
        let r = Request::builder("PUT", "/c/0", "h").body("application/octet-stream", &chunk);
        assert_eq!(
            String::from_utf8(r.head).unwrap(),
            "PUT /c/0 HTTP/1.1\r\nHost: h\r\nContent-Type: application/octet-stream\r\nContent-Length: 5\r\n\r\n"
        );
        assert!(std::ptr::eq(r.body, &chunk[..]));
    }

    #[test]
    fn reads_a_sized_answer_and_the_benchmark_headers() {
        let r = parse(
            "HTTP/1.1 201 Created\r\ncontent-length: 2\r\nX-Db-Round-Trips: 4\r\n\
             Idempotent-Replayed: true\r\n\r\n{}",
        )
        .unwrap();
        assert_eq!(
            (r.status, r.round_trips, r.replayed, r.close),
            (201, Some(4), true, false)
        );
        assert_eq!(r.body, b"{}");
    }

    #[test]
    fn reads_a_chunked_answer_with_trailers() {
        let r = parse(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
             3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"abcde");
        assert!(!r.close);
    }

    #[test]
    fn an_answer_without_a_length_ends_with_the_connection() {
        let r = parse("HTTP/1.1 200 OK\r\n\r\nto the end").unwrap();
        assert_eq!((r.body.as_slice(), r.close), (&b"to the end"[..], true));
        let r = parse("HTTP/1.1 204 No Content\r\n\r\n").unwrap();
        assert!(r.body.is_empty() && !r.close);
        let r = parse("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert!(r.close);
    }

    #[test]
    fn refuses_what_is_not_http() {
        assert!(parse("SSH-2.0-x\r\n\r\n").is_err());
        assert!(parse("HTTP/1.1 200 OK\r\nno colon\r\n\r\n").is_err());
        assert!(parse("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
        let e = parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn a_request_head_gives_its_length_and_none_at_the_end() {
        let mut r = io::Cursor::new(
            b"\r\nPUT /x HTTP/1.1\r\nHost: h\r\ncontent-length: 12\r\n\r\n".to_vec(),
        );
        assert_eq!(read_request_head(&mut r).unwrap(), Some(12));
        assert_eq!(read_request_head(&mut r).unwrap(), None);
    }

    /// A server that answers `answers` in turn, one per request, each on the connection it
    /// came on; it closes a connection after an answer with `Connection: close`.
    fn serve(answers: Vec<&'static str>) -> (String, thread::JoinHandle<Vec<u64>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let handle = thread::spawn(move || {
            let mut lengths = Vec::new();
            let mut answers = answers.into_iter().peekable();
            'accept: while let Ok((stream, _)) = listener.accept() {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut writer = stream;
                while let Some(len) = read_request_head(&mut reader).unwrap() {
                    let mut body = vec![0; len as usize];
                    reader.read_exact(&mut body).unwrap();
                    lengths.push(len);
                    let Some(answer) = answers.next() else {
                        break 'accept;
                    };
                    writer.write_all(answer.as_bytes()).unwrap();
                    if answers.peek().is_none() {
                        break 'accept;
                    }
                    if answer.contains("Connection: close") {
                        continue 'accept;
                    }
                }
            }
            lengths
        });
        (addr, handle)
    }

    #[test]
    fn keeps_its_connection_alive_and_counts_reconnects() {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        let closing = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
        let (addr, server) = serve(vec![ok, closing, ok]);
        let mut c = Connection::new(&addr, Duration::from_secs(10));
        let chunk = vec![1u8; 100_000];
        let put = Request::builder("PUT", "/c", &addr).body("application/octet-stream", &chunk);
        assert_eq!(c.send(&put).unwrap().status, 200);
        assert_eq!(c.connects(), 1);
        let r = c
            .send(&api_request(&addr, "GET", "/a", "k", None, None))
            .unwrap();
        assert!(r.close);
        assert_eq!(c.connects(), 1);
        c.send(&api_request(&addr, "POST", "/b", "k", None, Some("{}")))
            .unwrap();
        assert_eq!(c.connects(), 2);
        drop(c);
        assert_eq!(server.join().unwrap(), vec![100_000, 0, 2]);
    }
}
