//! The py4j wire protocol, as much of it as ScienceWorld needs, spoken over a `TcpStream`.
//!
//! A command is text lines: `c` (call), the target object id (`t` is the gateway's entry point,
//! the simulator), the method name, one line per argument (`s<string>`, `i<int>`, `b<bool>`,
//! ...), then `e`. The answer is one line: `!y<type><value>` on success (`!ys<string>`,
//! `!yi<int>`, `!yd<double>`, `!ybtrue`, `!yv` for void, `!yn` for null, `!ylo12` for a
//! reference to a Java list with object id `o12`), `!x...` when the call raised on the Java
//! side, `!z...` on a fatal protocol error. Strings are escaped both ways: a backslash becomes
//! `\\`, a newline `\n`, a carriage return `\r` (so a message is always one line).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// One argument of a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg<'a> {
    Str(&'a str),
    Int(i32),
    Bool(bool),
}

/// A decoded successful answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Void,
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(String),
    /// A reference to a Java object: its type letter (`r` object, `l` list, `a` map, `h` set,
    /// `t` array, `g` iterator) and its object id (`o12`).
    Ref {
        kind: char,
        id: String,
    },
}

/// Everything a call can end in besides a value.
#[derive(Debug, thiserror::Error)]
pub enum Py4jError {
    /// The Java side raised; the message (usually a stack trace) when it sent one.
    #[error("the Java side raised an error: {0}")]
    Java(String),
    /// A fatal protocol error (`!z`).
    #[error("py4j fatal error: {0}")]
    Fatal(String),
    /// An answer that is not py4j.
    #[error("malformed py4j answer: {0:.200}")]
    Malformed(String),
    /// The answer has another type than the call expects.
    #[error("`{method}` answered {got:?}, expected {expected}")]
    Unexpected {
        method: String,
        got: Value,
        expected: &'static str,
    },
    /// The connection closed (the JVM died or shut the socket).
    #[error("the connection to the simulator closed")]
    Closed,
    /// No whole answer within the call's time limit.
    #[error("no answer from the simulator within {0:?}")]
    Timeout(Duration),
    /// An answer longer than the limit.
    #[error("an answer of more than {0} bytes")]
    TooLong(usize),
    #[error("i/o error talking to the simulator: {0}")]
    Io(#[from] std::io::Error),
}

impl Py4jError {
    /// Whether the error means the connection (or the JVM) is gone or unusable: a timeout, a
    /// closed socket, an i/o error, an unreadable answer. A Java exception is not one.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            Py4jError::Closed
                | Py4jError::Timeout(_)
                | Py4jError::Io(_)
                | Py4jError::TooLong(_)
                | Py4jError::Malformed(_)
                | Py4jError::Fatal(_)
        )
    }
}

/// Escapes a string for the protocol: `\` -> `\\`, newline -> `\n`, CR -> `\r`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// Undoes [`escape`]: `\\` -> `\`, `\n` -> newline, `\r` -> CR. Any other backslash (not one
/// the protocol writes) is kept as it is, as py4j's own Python client does.
pub fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('\\') => {
                out.push('\\');
                chars.next();
            }
            Some('n') => {
                out.push('\n');
                chars.next();
            }
            Some('r') => {
                out.push('\r');
                chars.next();
            }
            _ => out.push('\\'),
        }
    }
    out
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

/// The text of a method call on object `target` (`t` for the entry point).
pub fn encode_call(target: &str, method: &str, args: &[Arg]) -> String {
    let mut out = String::new();
    push_line(&mut out, "c");
    push_line(&mut out, target);
    push_line(&mut out, method);
    for a in args {
        match a {
            Arg::Str(s) => {
                out.push('s');
                push_line(&mut out, &escape(s));
            }
            Arg::Int(i) => push_line(&mut out, &format!("i{i}")),
            Arg::Bool(b) => push_line(&mut out, if *b { "btrue" } else { "bfalse" }),
        }
    }
    push_line(&mut out, "e");
    out
}

/// The text that releases a Java object the gateway holds for us (`m`emory `d`elete).
pub fn encode_release(id: &str) -> String {
    format!("m\nd\n{id}\ne\n")
}

fn parse_double(v: &str) -> Option<f64> {
    match v {
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => v.parse().ok(),
    }
}

/// Decodes one answer line (without its newline; a leading `!` is optional).
pub fn decode_answer(line: &str) -> Result<Value, Py4jError> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let body = line.strip_prefix('!').unwrap_or(line);
    let malformed = || Py4jError::Malformed(line.to_string());
    let mut chars = body.chars();
    match chars.next() {
        Some('y') => {}
        Some('x') => {
            let rest = chars.as_str();
            let message = match rest.strip_prefix('s') {
                Some(m) => unescape(m),
                None if rest.is_empty() => "(no message)".to_string(),
                None => rest.to_string(),
            };
            return Err(Py4jError::Java(message));
        }
        Some('z') => return Err(Py4jError::Fatal(unescape(chars.as_str()))),
        _ => return Err(malformed()),
    }
    let kind = chars.next().ok_or_else(malformed)?;
    let v = chars.as_str();
    Ok(match kind {
        'v' => Value::Void,
        'n' => Value::Null,
        's' => Value::Str(unescape(v)),
        'b' => match v.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(malformed()),
        },
        'i' => Value::Int(v.parse().map_err(|_| malformed())?),
        'L' => Value::Long(v.parse().map_err(|_| malformed())?),
        'd' => Value::Double(parse_double(v).ok_or_else(malformed)?),
        'r' | 'l' | 'a' | 'h' | 't' | 'g' if !v.is_empty() => Value::Ref {
            kind,
            id: v.to_string(),
        },
        _ => return Err(malformed()),
    })
}

/// The longest answer accepted (the simulator's biggest, the valid actions as JSON, are tens
/// of kilobytes).
pub const MAX_ANSWER_BYTES: usize = 64 << 20;

/// A connection to a py4j gateway; every call has a time limit.
#[derive(Debug)]
pub struct Client {
    stream: TcpStream,
    /// Bytes read past the last answer's newline.
    pending: Vec<u8>,
    timeout: Duration,
}

impl Client {
    /// Connects to `addr` within `timeout`; calls are limited to `timeout` each.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<Client, Py4jError> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_nodelay(true)?;
        Ok(Client {
            stream,
            pending: Vec::new(),
            timeout,
        })
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Sends one command and reads its one-line answer, all within the time limit.
    pub fn exchange(&mut self, command: &str) -> Result<String, Py4jError> {
        let deadline = Instant::now() + self.timeout;
        self.stream.set_write_timeout(Some(self.timeout))?;
        self.stream.write_all(command.as_bytes()).map_err(|e| {
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) {
                Py4jError::Timeout(self.timeout)
            } else {
                Py4jError::Io(e)
            }
        })?;
        let mut buf = [0u8; 64 * 1024];
        loop {
            if let Some(pos) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=pos).collect();
                let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
                return Ok(text);
            }
            if self.pending.len() > MAX_ANSWER_BYTES {
                return Err(Py4jError::TooLong(MAX_ANSWER_BYTES));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Py4jError::Timeout(self.timeout));
            }
            self.stream.set_read_timeout(Some(left))?;
            match self.stream.read(&mut buf) {
                Ok(0) => return Err(Py4jError::Closed),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(Py4jError::Timeout(self.timeout))
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Py4jError::Io(e)),
            }
        }
    }

    /// Calls `method` on object `target`.
    pub fn call_on(
        &mut self,
        target: &str,
        method: &str,
        args: &[Arg],
    ) -> Result<Value, Py4jError> {
        let answer = self.exchange(&encode_call(target, method, args))?;
        if answer.is_empty() {
            // What py4j's own client sees when the other end is dying.
            return Err(Py4jError::Closed);
        }
        decode_answer(&answer)
    }

    /// Calls `method` on the entry point (the simulator).
    pub fn call(&mut self, method: &str, args: &[Arg]) -> Result<Value, Py4jError> {
        self.call_on("t", method, args)
    }

    pub fn call_str(&mut self, method: &str, args: &[Arg]) -> Result<String, Py4jError> {
        match self.call(method, args)? {
            Value::Str(s) => Ok(s),
            got => Err(unexpected(method, got, "a string")),
        }
    }

    pub fn call_f64(&mut self, method: &str, args: &[Arg]) -> Result<f64, Py4jError> {
        match self.call(method, args)? {
            Value::Double(d) => Ok(d),
            Value::Int(i) => Ok(f64::from(i)),
            got => Err(unexpected(method, got, "a number")),
        }
    }

    pub fn call_i64(&mut self, method: &str, args: &[Arg]) -> Result<i64, Py4jError> {
        match self.call(method, args)? {
            Value::Int(i) => Ok(i64::from(i)),
            Value::Long(l) => Ok(l),
            got => Err(unexpected(method, got, "an integer")),
        }
    }

    pub fn call_bool(&mut self, method: &str, args: &[Arg]) -> Result<bool, Py4jError> {
        match self.call(method, args)? {
            Value::Bool(b) => Ok(b),
            got => Err(unexpected(method, got, "a boolean")),
        }
    }

    /// Calls a method that returns a `java.util.List` and reads its elements one by one
    /// (`size()`, then `get(i)`), then releases the list.
    pub fn call_list(&mut self, method: &str, args: &[Arg]) -> Result<Vec<Value>, Py4jError> {
        let id = match self.call(method, args)? {
            Value::Ref { kind: 'l', id } => id,
            got => return Err(unexpected(method, got, "a list")),
        };
        let n = match self.call_on(&id, "size", &[])? {
            Value::Int(n) if n >= 0 => n,
            got => return Err(unexpected("size", got, "a list size")),
        };
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
            out.push(self.call_on(&id, "get", &[Arg::Int(i)])?);
        }
        // Best effort: the gateway keeps the list until told.
        let _ = self.exchange(&encode_release(&id));
        Ok(out)
    }
}

fn unexpected(method: &str, got: Value, expected: &'static str) -> Py4jError {
    Py4jError::Unexpected {
        method: method.to_string(),
        got,
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_backslash_newline_and_cr() {
        assert_eq!(escape("a\\b\nc\rd"), "a\\\\b\\nc\\rd");
        assert_eq!(escape("plain"), "plain");
        assert_eq!(escape(""), "");
        // A backslash before an n stays a backslash, not a newline.
        assert_eq!(escape("\\n"), "\\\\n");
    }

    #[test]
    fn unescape_inverts_escape() {
        for s in ["", "x", "a\\b\nc\rd", "\\n", "\\\\\n\n", "é√\\😀\n"] {
            assert_eq!(unescape(&escape(s)), s, "{s:?}");
        }
        // Hand-worked: `\\n` is a backslash then n; `\n` a newline; a lone `\` stays.
        assert_eq!(unescape("a\\\\nb"), "a\\nb");
        assert_eq!(unescape("a\\nb"), "a\nb");
        assert_eq!(unescape("x\\ty\\"), "x\\ty\\");
    }

    #[test]
    fn encodes_a_call_with_typed_arguments() {
        let text = encode_call(
            "t",
            "load",
            &[
                Arg::Str("boil"),
                Arg::Int(3),
                Arg::Str("easy"),
                Arg::Bool(false),
            ],
        );
        assert_eq!(text, "c\nt\nload\nsboil\ni3\nseasy\nbfalse\ne\n");
        assert_eq!(encode_call("t", "reset", &[]), "c\nt\nreset\ne\n");
        assert_eq!(
            encode_call("o7", "get", &[Arg::Int(-1), Arg::Bool(true)]),
            "c\no7\nget\ni-1\nbtrue\ne\n"
        );
    }

    #[test]
    fn a_string_argument_stays_on_one_line() {
        let text = encode_call("t", "step", &[Arg::Str("go\nto \\ kitchen\r")]);
        assert_eq!(text, "c\nt\nstep\nsgo\\nto \\\\ kitchen\\r\ne\n");
        assert_eq!(text.lines().count(), 5);
    }

    #[test]
    fn decodes_answers() {
        assert_eq!(decode_answer("!ys").unwrap(), Value::Str(String::new()));
        assert_eq!(
            decode_answer("!ysroom:\\n\tthe agent\\\\x").unwrap(),
            Value::Str("room:\n\tthe agent\\x".into())
        );
        assert_eq!(decode_answer("!yd0.0").unwrap(), Value::Double(0.0));
        assert_eq!(
            decode_answer("!yd0.08333333333333333").unwrap(),
            Value::Double(0.08333333333333333)
        );
        assert_eq!(decode_answer("!yd-1.0").unwrap(), Value::Double(-1.0));
        assert_eq!(
            decode_answer("!ydInfinity").unwrap(),
            Value::Double(f64::INFINITY)
        );
        assert_eq!(decode_answer("!ybfalse").unwrap(), Value::Bool(false));
        assert_eq!(decode_answer("!ybtrue").unwrap(), Value::Bool(true));
        assert_eq!(decode_answer("!yi30").unwrap(), Value::Int(30));
        assert_eq!(
            decode_answer("!yL-9000000000").unwrap(),
            Value::Long(-9_000_000_000)
        );
        assert_eq!(decode_answer("!yv").unwrap(), Value::Void);
        assert_eq!(decode_answer("!yn").unwrap(), Value::Null);
        assert_eq!(
            decode_answer("!ylo12").unwrap(),
            Value::Ref {
                kind: 'l',
                id: "o12".into()
            }
        );
        // Without the leading `!` too (py4j's client strips it).
        assert_eq!(decode_answer("yi5").unwrap(), Value::Int(5));
    }

    #[test]
    fn decodes_errors() {
        match decode_answer("!xspy4j.Py4JException: Method x([]) does not exist\\n\tat y") {
            Err(Py4jError::Java(m)) => {
                assert_eq!(m, "py4j.Py4JException: Method x([]) does not exist\n\tat y");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(decode_answer("!x"), Err(Py4jError::Java(_))));
        assert!(matches!(decode_answer("!xro3"), Err(Py4jError::Java(m)) if m == "ro3"));
        assert!(matches!(decode_answer("!z"), Err(Py4jError::Fatal(_))));
        for bad in [
            "", "!", "!y", "!yq1", "!yiX", "!ybmaybe", "!ydabc", "!yl", "hello",
        ] {
            let e = decode_answer(bad).unwrap_err();
            assert!(e.is_transport(), "{bad:?}: {e:?}");
        }
        assert!(!Py4jError::Java("x".into()).is_transport());
    }

    #[test]
    fn release_command() {
        assert_eq!(encode_release("o12"), "m\nd\no12\ne\n");
    }

    /// A fake gateway on a local socket: answers arrive split, two in one packet, then none.
    #[test]
    fn client_reads_split_and_joined_answers_and_times_out() {
        use std::net::TcpListener;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            // Reads until `n` whole commands (each ends in a line `e`) have arrived; two may
            // come in one read.
            let mut read_commands = |s: &mut TcpStream, got: &mut Vec<u8>, n: usize| {
                while got.windows(3).filter(|w| w == b"\ne\n").count() < n {
                    let k = s.read(&mut buf).unwrap();
                    assert!(k > 0, "the client closed early");
                    got.extend_from_slice(&buf[..k]);
                }
            };
            read_commands(&mut s, &mut got, 1);
            s.write_all(b"!ys").unwrap();
            s.flush().unwrap();
            std::thread::sleep(Duration::from_millis(30));
            s.write_all(b"a\\nb\n!yi7\n").unwrap();
            read_commands(&mut s, &mut got, 3);
            // Silence for the third: the client times out.
            std::thread::sleep(Duration::from_millis(400));
            got
        });
        let mut c = Client::connect(addr, Duration::from_millis(200)).unwrap();
        assert_eq!(
            c.call_str("step", &[Arg::Str("x")]).unwrap(),
            "a\nb".to_string()
        );
        assert_eq!(c.call_i64("getNumMoves", &[]).unwrap(), 7);
        let t = Instant::now();
        assert!(matches!(
            c.call("getScore", &[]),
            Err(Py4jError::Timeout(_))
        ));
        assert!(t.elapsed() < Duration::from_secs(2));
        let got = server.join().unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "c\nt\nstep\nsx\ne\nc\nt\ngetNumMoves\ne\nc\nt\ngetScore\ne\n"
        );
    }
}
