//! What the test modules share: short limits, a sandbox, and checks that a run ended in time
//! and left no process behind.

use std::time::{Duration, Instant};

use quester_sandbox::{Execution, Limits, Sandbox};

/// Short limits so the suite runs in seconds.
pub fn quick_limits() -> Limits {
    Limits {
        wall: Duration::from_secs(4),
        cpu_seconds: 3,
        per_test: Duration::from_secs(1),
        ..Limits::default()
    }
}

pub fn sandbox() -> Sandbox {
    let sb = Sandbox::new(quick_limits()).expect("sandbox");
    eprintln!("protections: {}", sb.protections());
    sb
}

/// A process seen in /proc.
#[derive(Debug)]
pub struct Proc {
    pub pid: u32,
    pub state: char,
    pub pgid: u32,
    pub sid: u32,
    pub uid: u32,
}

pub fn processes() -> Vec<Proc> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The command name is in parentheses and may contain spaces: split after the last ')'.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        if fields.len() < 4 {
            continue;
        }
        let uid = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
            })
            .and_then(|u| u.parse().ok())
            .unwrap_or(u32::MAX);
        out.push(Proc {
            pid,
            state: fields[0].chars().next().unwrap_or('?'),
            pgid: fields[2].parse().unwrap_or(0),
            sid: fields[3].parse().unwrap_or(0),
            uid,
        });
    }
    out
}

/// Processes that belong to the run: its process group, its session, or its per-run uid.
pub fn leftovers(execution: &Execution) -> Vec<Proc> {
    let pid = execution.pid;
    processes()
        .into_iter()
        .filter(|p| p.pid == pid || p.pgid == pid || p.sid == pid || execution.uid == Some(p.uid))
        .collect()
}

/// Asserts that nothing of the run is left: with a pid namespace not even a zombie, without
/// one nothing running (zombies reparented to the host's init are its to reap, not ours).
pub fn assert_nothing_left(sb: &Sandbox, execution: &Execution) {
    let strict = sb.protections().pid_namespace;
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left: Vec<Proc> = leftovers(execution)
            .into_iter()
            .filter(|p| strict || p.state != 'Z')
            .collect();
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            panic!("processes of the run are left: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The run ended within the wall limit plus two seconds (measured from outside).
pub fn assert_in_time(sb: &Sandbox, started: Instant) {
    let took = started.elapsed();
    let bound = sb.limits().wall + Duration::from_secs(2);
    assert!(took <= bound, "took {took:?}, more than {bound:?}");
}

/// A name no other run uses.
pub fn unique(tag: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "quester-escape-{tag}-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}
