//! HTTP/1.x on a TCP connection, as much as the API needs: requests with a `Content-Length`
//! body (keep-alive, `Expect: 100-continue`), responses with a length or as an event stream.
//! Owning the socket (rather than a server library's request object) is what lets a waiting
//! request notice that its client has hung up.

use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;

/// Longest request head (request line and headers) accepted.
const MAX_HEAD_BYTES: usize = 64 << 10;

/// One parsed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpRequest {
    pub method: String,
    /// The target without its query.
    pub path: String,
    /// HTTP/1.1 (rather than 1.0).
    pub http11: bool,
    /// Whether the connection stays open after the answer.
    pub keep_alive: bool,
    pub body: Vec<u8>,
}

/// Why no request could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The client closed the connection (or it idled out) between requests.
    Closed,
    /// A malformed or unacceptable request: answered with this status, then the connection
    /// closes.
    Bad(u16, String),
}

/// A client connection: its buffered reader and a handle to write answers with.
pub(crate) struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Connection {
    /// Wraps an accepted stream.
    pub fn new(stream: TcpStream) -> io::Result<Self> {
        let writer = stream.try_clone()?;
        Ok(Self {
            reader: BufReader::new(stream),
            writer,
        })
    }

    /// Where answers are written.
    pub fn writer(&mut self) -> &mut TcpStream {
        &mut self.writer
    }

    /// True once the client has closed or reset the connection (checked without consuming
    /// anything it sent).
    pub fn client_gone(&self) -> bool {
        let s = &self.writer;
        if s.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let gone = match s.peek(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted),
        };
        let _ = s.set_nonblocking(false);
        gone
    }

    /// Closes our side, then reads and drops what the client still sends (at most 1 MiB or
    /// half a second): closing with unread data would reset the connection, and the client
    /// could lose the answer just written.
    pub fn linger(&mut self) {
        let _ = self.writer.shutdown(std::net::Shutdown::Write);
        let _ = self
            .writer
            .set_read_timeout(Some(std::time::Duration::from_millis(500)));
        let _ = io::copy(&mut (&mut self.reader).take(1 << 20), &mut io::sink());
    }

    /// Reads the next request, its body at most `max_body` bytes.
    pub fn read_request(&mut self, max_body: usize) -> Result<HttpRequest, ReadError> {
        let bad = |why: &str| ReadError::Bad(400, why.to_string());
        let mut head = Vec::new();
        loop {
            let start = head.len();
            let n = (&mut self.reader)
                .take((MAX_HEAD_BYTES + 1 - start) as u64)
                .read_until(b'\n', &mut head)
                .map_err(|_| ReadError::Closed)?;
            if n == 0 {
                return if start == 0 {
                    Err(ReadError::Closed)
                } else {
                    Err(bad("the request head ended early"))
                };
            }
            if head.len() > MAX_HEAD_BYTES {
                return Err(ReadError::Bad(431, "the request head is too large".into()));
            }
            let line = &head[start..];
            if line == b"\r\n" || line == b"\n" {
                if start == 0 {
                    // Blank lines before a request are allowed (RFC 9112 2.2).
                    head.clear();
                    continue;
                }
                break;
            }
        }
        let head = String::from_utf8(head).map_err(|_| bad("the request head is not UTF-8"))?;
        let mut lines = head.lines();
        let mut first = lines.next().unwrap_or("").split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (first.next(), first.next(), first.next(), first.next())
        else {
            return Err(bad("malformed request line"));
        };
        let http11 = match version {
            "HTTP/1.1" => true,
            "HTTP/1.0" => false,
            other => {
                return Err(ReadError::Bad(
                    505,
                    format!("HTTP version {other} is not supported"),
                ))
            }
        };
        let mut length = 0usize;
        let mut keep_alive = http11;
        let mut expect_continue = false;
        for line in lines.filter(|l| !l.is_empty()) {
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| bad("malformed header line"))?;
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => {
                    length = value
                        .parse()
                        .map_err(|_| bad("Content-Length is not a number"))?;
                }
                "transfer-encoding" => {
                    return Err(ReadError::Bad(
                        411,
                        "send the body with a Content-Length".into(),
                    ))
                }
                "connection" => {
                    let v = value.to_ascii_lowercase();
                    if v.contains("close") {
                        keep_alive = false;
                    } else if v.contains("keep-alive") {
                        keep_alive = true;
                    }
                }
                "expect" => expect_continue = value.eq_ignore_ascii_case("100-continue"),
                _ => {}
            }
        }
        if length > max_body {
            return Err(ReadError::Bad(
                413,
                format!("request body exceeds {max_body} bytes"),
            ));
        }
        if expect_continue && length > 0 {
            let _ = self.writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        let mut body = vec![0u8; length];
        self.reader
            .read_exact(&mut body)
            .map_err(|_| bad("the request body ended early"))?;
        Ok(HttpRequest {
            method: method.to_string(),
            path: target.split('?').next().unwrap_or("").to_string(),
            http11,
            keep_alive,
            body,
        })
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Content Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// An answer with a body of known length.
pub(crate) struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// `body` as JSON.
    pub fn json(status: u16, body: &impl serde::Serialize) -> Self {
        Self {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body: serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec()),
        }
    }

    /// Writes the answer; `keep_alive` false announces that the connection closes.
    pub fn write(&self, out: &mut impl Write, keep_alive: bool) -> io::Result<()> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !keep_alive {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        out.write_all(head.as_bytes())?;
        out.write_all(&self.body)?;
        out.flush()
    }
}
