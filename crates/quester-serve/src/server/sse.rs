//! A server-sent-event response written straight to the client's connection: tiny_http's own
//! responses buffer chunked bodies 8 KiB at a time, which would hold tokens back, so the head
//! and each event (one HTTP chunk) are written and flushed here. A failed write means the
//! client has gone.

use std::io::{self, Write};

/// An open event stream.
pub(crate) struct SseWriter {
    out: Box<dyn Write + Send>,
    /// HTTP/1.1 frames events as chunks; an HTTP/1.0 body ends when the connection closes.
    chunked: bool,
}

impl SseWriter {
    /// Answers `request` with status 200 and an event-stream head.
    pub fn start(request: tiny_http::Request) -> io::Result<Self> {
        let version = request.http_version().clone();
        let chunked = version >= tiny_http::HTTPVersion(1, 1);
        let mut out = request.into_writer();
        let framing = if chunked {
            "Transfer-Encoding: chunked\r\n"
        } else {
            "Connection: close\r\n"
        };
        write!(
            out,
            "HTTP/{}.{} 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n{framing}\r\n",
            version.0, version.1
        )?;
        out.flush()?;
        Ok(Self { out, chunked })
    }

    /// Sends `data: <json>` as one event.
    pub fn event(&mut self, body: &impl serde::Serialize) -> io::Result<()> {
        let json = serde_json::to_string(body).map_err(io::Error::other)?;
        self.send(&format!("data: {json}\n\n"))
    }

    /// Sends a comment line (clients ignore it): a write that fails once the client has gone.
    pub fn comment(&mut self, text: &str) -> io::Result<()> {
        self.send(&format!(": {text}\n\n"))
    }

    /// Sends `data: [DONE]` and ends the body.
    pub fn done(mut self) -> io::Result<()> {
        self.send("data: [DONE]\n\n")?;
        self.end()
    }

    /// Ends the body.
    pub fn end(mut self) -> io::Result<()> {
        if self.chunked {
            self.out.write_all(b"0\r\n\r\n")?;
        }
        self.out.flush()
    }

    fn send(&mut self, data: &str) -> io::Result<()> {
        if self.chunked {
            write!(self.out, "{:x}\r\n{data}\r\n", data.len())?;
        } else {
            self.out.write_all(data.as_bytes())?;
        }
        self.out.flush()
    }
}
