//! A server-sent-event response written straight to the client's connection, each event
//! flushed as it is sent (one HTTP chunk). A failed write means the client has gone.

use std::io::{self, Write};

/// An open event stream.
pub(crate) struct SseWriter<'a> {
    out: &'a mut dyn Write,
    /// HTTP/1.1 frames events as chunks; an HTTP/1.0 body ends when the connection closes.
    chunked: bool,
}

impl<'a> SseWriter<'a> {
    /// Writes the head of a 200 event-stream answer (chunked for HTTP/1.1).
    pub fn start(out: &'a mut dyn Write, http11: bool) -> io::Result<Self> {
        let framing = if http11 {
            "Transfer-Encoding: chunked\r\n"
        } else {
            "Connection: close\r\n"
        };
        write!(
            out,
            "HTTP/1.{} 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n{framing}\r\n",
            u8::from(http11)
        )?;
        out.flush()?;
        Ok(Self {
            out,
            chunked: http11,
        })
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
    pub fn end(self) -> io::Result<()> {
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
