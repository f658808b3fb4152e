//! Reading a child's stream in its own thread, keeping only the first `cap` bytes.

use std::io::{ErrorKind, Read};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Instant;

/// The first bytes of a stream and whether more came after them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Captured {
    pub bytes: Vec<u8>,
    pub truncated: bool,
}

impl Captured {
    /// Keeps what fits under `cap` of `chunk`; the rest only sets the flag.
    pub(crate) fn push(&mut self, chunk: &[u8], cap: usize) {
        let room = cap.saturating_sub(self.bytes.len());
        let take = room.min(chunk.len());
        self.bytes.extend_from_slice(&chunk[..take]);
        if take < chunk.len() {
            self.truncated = true;
        }
    }

    /// The text, non-UTF-8 bytes replaced; a character cut in half by the cap is dropped.
    pub(crate) fn text(&self) -> String {
        let mut bytes = &self.bytes[..];
        if self.truncated {
            if let Err(e) = std::str::from_utf8(bytes) {
                if e.error_len().is_none() {
                    bytes = &bytes[..e.valid_up_to()];
                }
            }
        }
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// Reads `reader` to the end, keeping the first `cap` bytes: the rest is read and dropped, so
/// the writer never blocks on a full pipe.
pub(crate) fn drain<R: Read>(mut reader: R, cap: usize, sink: &Mutex<Captured>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let mut captured = sink
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                captured.push(&buf[..n], cap);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
    }
}

/// A stream being read in a background thread.
pub(crate) struct Capture {
    shared: Arc<Mutex<Captured>>,
    done: mpsc::Receiver<()>,
}

impl Capture {
    pub(crate) fn spawn<R: Read + Send + 'static>(reader: R, cap: usize, name: &str) -> Capture {
        let shared = Arc::new(Mutex::new(Captured::default()));
        let (tx, done) = mpsc::channel();
        let sink = Arc::clone(&shared);
        // Without a thread the reader is dropped unread: the child gets EPIPE and the report has
        // no output, which is better than failing the run.
        let _ = thread::Builder::new()
            .name(format!("sandbox-{name}"))
            .spawn(move || {
                drain(reader, cap, &sink);
                let _ = tx.send(());
            });
        Capture { shared, done }
    }

    /// Waits for the end of the stream until `deadline`, then takes what has arrived. Past the
    /// deadline the thread is left to finish on its own (something outside the sandbox's kill
    /// still holds the pipe open).
    pub(crate) fn finish(self, deadline: Instant) -> Captured {
        let wait = deadline.saturating_duration_since(Instant::now());
        let _ = self.done.recv_timeout(wait);
        let mut captured = self
            .shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::take(&mut *captured)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::time::Duration;

    /// A reader of `len` bytes of `b'x'` that counts how much was read from it.
    struct Source {
        left: usize,
        read: Arc<Mutex<usize>>,
    }

    impl Read for Source {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.left.min(buf.len()).min(7000);
            buf[..n].fill(b'x');
            self.left -= n;
            *self.read.lock().unwrap() += n;
            Ok(n)
        }
    }

    #[test]
    fn keeps_the_first_cap_bytes_and_drains_the_rest() {
        let read = Arc::new(Mutex::new(0));
        let source = Source {
            left: 5_000_000,
            read: Arc::clone(&read),
        };
        let captured =
            Capture::spawn(source, 65536, "t").finish(Instant::now() + Duration::from_secs(10));
        assert_eq!(captured.bytes.len(), 65536);
        assert!(captured.truncated);
        assert_eq!(
            *read.lock().unwrap(),
            5_000_000,
            "the whole stream is consumed"
        );
    }

    #[test]
    fn exactly_cap_bytes_is_not_truncated() {
        let mut c = Captured::default();
        c.push(b"abcd", 4);
        assert!(!c.truncated);
        c.push(b"", 4);
        assert!(!c.truncated);
        c.push(b"e", 4);
        assert!(c.truncated);
        assert_eq!(c.bytes, b"abcd");
    }

    #[test]
    fn text_is_lossy_and_drops_a_character_cut_by_the_cap() {
        let mut c = Captured::default();
        c.push(b"ok \xff\xfe end", 100);
        assert_eq!(c.text(), "ok \u{fffd}\u{fffd} end");
        let mut cut = Captured::default();
        cut.push("ab\u{e9}".as_bytes(), 3); // 'é' is two bytes: only its first fits
        assert!(cut.truncated);
        assert_eq!(cut.text(), "ab");
    }
}
