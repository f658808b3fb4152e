//! The harness's result channel: lines `<nonce> <event> <fields>` on fd 3, strings as
//! `x<hex of UTF-8>`, turned into a `TestReport`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::{Execution, Limits, Termination, TestFailure, TestReport};

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Event {
    /// The tests found in check(), in order (sent before any submitted code runs).
    Tests { sources: Vec<String> },
    /// One test finished.
    Result { i: usize, ok: bool, msg: String },
    /// The program as a whole failed (or a context statement of check() did).
    Error { msg: String, memory: bool },
    /// run_python: the program died of a MemoryError.
    Memory,
    /// The harness reached an orderly end.
    Done,
}

fn hex_string(field: &str) -> Option<String> {
    let hex = field.strip_prefix('x')?.as_bytes();
    if hex.len() % 2 != 0 {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let bytes = hex
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect::<Option<Vec<u8>>>()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn flag(field: &str) -> Option<bool> {
    match field {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}

fn parse_event(body: &str) -> Option<Event> {
    let fields: Vec<&str> = body.split(' ').collect();
    let event = match fields.as_slice() {
        ["tests", n, sources @ ..] => {
            let sources = sources
                .iter()
                .map(|f| hex_string(f))
                .collect::<Option<Vec<_>>>()?;
            if n.parse::<usize>().ok()? != sources.len() {
                return None;
            }
            Event::Tests { sources }
        }
        ["result", i, ok, msg] => Event::Result {
            i: i.parse().ok()?,
            ok: flag(ok)?,
            msg: hex_string(msg)?,
        },
        ["error", memory, msg] => Event::Error {
            memory: flag(memory)?,
            msg: hex_string(msg)?,
        },
        ["memory"] => Event::Memory,
        ["done"] => Event::Done,
        _ => return None,
    };
    Some(event)
}

/// The events on lines that start with `nonce` and a space; everything else (whatever the
/// submission managed to write to the channel) is ignored.
pub(crate) fn parse_events(raw: &[u8], nonce: &str) -> Vec<Event> {
    let prefix = nonce.as_bytes();
    raw.split(|b| *b == b'\n')
        .filter_map(|line| {
            let rest = line.strip_prefix(prefix)?.strip_prefix(b" ")?;
            parse_event(std::str::from_utf8(rest).ok()?)
        })
        .collect()
}

pub(crate) fn memory_reported(events: &[Event]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, Event::Memory) || matches!(e, Event::Error { memory, .. } if *memory))
}

/// "3 s", "0.5 s", "1.25 s".
pub(crate) fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        let s = format!("{:.3}", d.as_secs_f64());
        format!("{} s", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGSYS => "SIGSYS",
        _ => "signal",
    }
}

/// What ended the process, as a short sentence, where that was not a normal end.
fn termination_problem(execution: &Execution, limits: &Limits, done: bool) -> Option<String> {
    match execution.termination {
        Termination::WallTimeout => Some(format!(
            "killed at the wall-clock limit ({})",
            seconds(limits.wall)
        )),
        Termination::CpuLimit => Some(format!(
            "CPU time limit ({} s) exceeded",
            limits.cpu_seconds
        )),
        // The harness has already said what ran out of memory.
        Termination::MemoryLimit => None,
        Termination::Signaled(sig) => {
            Some(format!("killed by signal {sig} ({})", signal_name(sig)))
        }
        Termination::Exited(_) if done => None,
        Termination::Exited(code) => {
            let last = execution
                .stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| {
                    let l = l.trim();
                    let short: String = l.chars().take(200).collect();
                    format!(": {short}")
                })
                .unwrap_or_default();
            Some(format!(
                "the program exited with code {code} before the tests finished{last}"
            ))
        }
    }
}

pub(crate) fn test_report(events: Vec<Event>, execution: Execution, limits: &Limits) -> TestReport {
    let mut sources: Option<Vec<String>> = None;
    let mut results: BTreeMap<usize, (bool, String)> = BTreeMap::new();
    let mut errors: Vec<String> = Vec::new();
    let mut done = false;
    for event in events {
        match event {
            Event::Tests { sources: s } => {
                if sources.is_none() {
                    sources = Some(s);
                }
            }
            Event::Result { i, ok, msg } => {
                if sources.as_ref().is_some_and(|s| i < s.len()) {
                    results.entry(i).or_insert((ok, msg));
                }
            }
            Event::Error { msg, .. } => errors.push(msg),
            Event::Done => done = true,
            Event::Memory => {}
        }
    }
    let sources = sources.unwrap_or_default();
    let total = sources.len();
    if let Some(problem) = termination_problem(&execution, limits, done) {
        errors.push(problem);
    }
    if errors.is_empty() && total == 0 {
        errors.push("no tests found in check()".to_string());
    }
    let error = (!errors.is_empty()).then(|| errors.join("; "));
    let mut passed = Vec::new();
    let mut failures = Vec::new();
    for (index, source) in sources.into_iter().enumerate() {
        match results.remove(&index) {
            Some((true, _)) => passed.push(index),
            Some((false, message)) => failures.push(TestFailure {
                index,
                source,
                message,
            }),
            None => failures.push(TestFailure {
                index,
                source,
                message: format!(
                    "not run: {}",
                    error.as_deref().unwrap_or("the harness stopped early")
                ),
            }),
        }
    }
    TestReport {
        total,
        passed,
        failures,
        error,
        execution,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONCE: &str = "0123456789abcdef0123456789abcdef";

    fn execution(termination: Termination) -> Execution {
        Execution {
            termination,
            stdout: String::new(),
            stderr: String::new(),
            stdout_truncated: false,
            stderr_truncated: false,
            elapsed: Duration::from_millis(30),
            pid: 1,
            uid: None,
        }
    }

    fn x(text: &str) -> String {
        let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
        format!("x{hex}")
    }

    fn line(body: &str) -> String {
        format!("\n{NONCE} {body}\n")
    }

    fn tests_line(sources: &[&str]) -> String {
        let fields: Vec<String> = sources.iter().map(|s| x(s)).collect();
        line(format!("tests {} {}", sources.len(), fields.join(" ")).trim_end())
    }

    #[test]
    fn only_lines_with_the_nonce_count() {
        let mut raw = String::new();
        raw += &tests_line(&["assert a", "assert b"]);
        // Forgeries: no nonce, a wrong nonce, the nonce without the space.
        raw += &format!("result 0 1 {}\n", x(""));
        raw += &format!("\nffffffffffffffffffffffffffffffff result 1 1 {}\n", x(""));
        raw += &format!("{NONCE}done\n");
        raw += &line(&format!("result 0 0 {}", x("AssertionError")));
        raw += "garbage without newline";
        raw += &line(&format!("result 1 1 {}", x("")));
        // An index past the tests, and malformed lines.
        raw += &line(&format!("result 7 1 {}", x("")));
        raw += &line("result 1 yes x");
        raw += &line("tests 3 x61");
        raw += &line("error 0 x6");
        let events = parse_events(raw.as_bytes(), NONCE);
        assert_eq!(events.len(), 4, "{events:?}");
        let report = test_report(
            events,
            execution(Termination::Exited(0)),
            &Limits::default(),
        );
        assert_eq!(report.total, 2);
        assert_eq!(report.passed, vec![1]);
        assert_eq!(report.failures.len(), 1);
        assert_eq!(report.failures[0].message, "AssertionError");
        // No "done" with the nonce: the run did not finish.
        assert!(report
            .error
            .as_deref()
            .unwrap()
            .contains("before the tests finished"));
        assert!(!report.all_passed());
    }

    #[test]
    fn strings_round_trip() {
        let raw = line(&format!("error 1 {}", x("MemoryError: é \u{1F600} \n end")));
        assert_eq!(
            parse_events(raw.as_bytes(), NONCE),
            vec![Event::Error {
                msg: "MemoryError: é \u{1F600} \n end".into(),
                memory: true
            }]
        );
        assert_eq!(
            parse_events(tests_line(&[]).as_bytes(), NONCE),
            vec![Event::Tests { sources: vec![] }]
        );
    }

    #[test]
    fn first_result_per_test_wins_and_missing_ones_are_not_run() {
        let raw = [
            tests_line(&["assert a", "assert b", "assert c"]),
            line(&format!("result 0 1 {}", x(""))),
            line(&format!("result 0 0 {}", x("x"))),
            tests_line(&[]),
        ]
        .concat();
        let events = parse_events(raw.as_bytes(), NONCE);
        let report = test_report(
            events,
            execution(Termination::WallTimeout),
            &Limits::default(),
        );
        assert_eq!(report.total, 3);
        assert_eq!(report.passed, vec![0]);
        assert_eq!(
            report.failures.iter().map(|f| f.index).collect::<Vec<_>>(),
            vec![1, 2]
        );
        assert_eq!(
            report.failures[0].message,
            "not run: killed at the wall-clock limit (10 s)"
        );
        assert_eq!(report.failures[1].source, "assert c");
    }

    #[test]
    fn a_clean_run_passes() {
        let raw = [
            tests_line(&["assert a"]),
            line(&format!("result 0 1 {}", x(""))),
            line("done"),
        ]
        .concat();
        let report = test_report(
            parse_events(raw.as_bytes(), NONCE),
            execution(Termination::Exited(0)),
            &Limits::default(),
        );
        assert!(report.all_passed(), "{report:?}");
        let none = test_report(
            Vec::new(),
            execution(Termination::Exited(0)),
            &Limits::default(),
        );
        assert!(!none.all_passed());
    }

    #[test]
    fn seconds_are_short() {
        assert_eq!(seconds(Duration::from_secs(3)), "3 s");
        assert_eq!(seconds(Duration::from_millis(500)), "0.5 s");
        assert_eq!(seconds(Duration::from_millis(1250)), "1.25 s");
    }
}
