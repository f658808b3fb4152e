//! The ScienceWorld simulator: `scienceworld.jar` from the PyPI wheel, run as a Java process on
//! a free loopback port, spoken to over py4j. An env holds one at a time; idle ones wait in
//! the process-wide pool of `pool.rs` between envs.

use super::py4j::{Arg, Client, Py4jError, Value};
use quester_fetch::WheelFile;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The simulator: `scienceworld/scienceworld.jar` of the wheel `scienceworld==1.2.3`
/// (Apache-2.0), fetched on first use into `$QUESTER_HOME/data/`.
pub const JAR: WheelFile = WheelFile {
    requirement: "scienceworld==1.2.3",
    member: "scienceworld/scienceworld.jar",
    cache_subdir: "data",
    file_name: "scienceworld-1.2.3.jar",
    size: 7_784_058,
    sha256: "f4e1fdce0cdabe1bab7128a7e78ea820210d9db3c28d7272bcbbc3f3a1c5f0d7",
};

/// Everything that can go wrong starting or talking to the simulator.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(
        "ScienceWorld needs a Java runtime (Java 8 or later; 17 is tested), but `{java}` could \
         not be run: {source}. Install one (Debian/Ubuntu: `apt-get install default-jre-headless`; \
         macOS: `brew install openjdk`), or set JAVA_HOME to a JRE"
    )]
    NoJava {
        java: String,
        source: std::io::Error,
    },
    #[error("cannot fetch the ScienceWorld jar: {0}")]
    Fetch(#[from] quester_fetch::FetchError),
    #[error("cannot start the ScienceWorld simulator: {0}")]
    Start(String),
    #[error("the ScienceWorld simulator did not answer within {timeout:?} of starting{log}")]
    StartTimeout { timeout: Duration, log: String },
    #[error("the ScienceWorld simulator (pid {pid}) exited while starting ({status}){log}")]
    ExitedEarly {
        pid: u32,
        status: String,
        log: String,
    },
    #[error("the ScienceWorld simulator (pid {pid}) is not running")]
    Dead { pid: u32 },
    #[error("ScienceWorld: {0}")]
    Protocol(#[from] Py4jError),
    /// The simulator answered with its own error text (an unknown task, say).
    #[error("ScienceWorld: {0}")]
    Simulator(String),
}

impl ServerError {
    /// Whether the process (or its connection) is gone, so that a new one may help.
    pub fn is_fatal(&self) -> bool {
        match self {
            ServerError::Dead { .. } => true,
            ServerError::Protocol(e) => e.is_transport(),
            _ => false,
        }
    }
}

/// How to start the simulator.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerOptions {
    /// The jar; `None` fetches [`JAR`].
    pub jar: Option<PathBuf>,
    /// The `java` to run; `None`: `$JAVA_HOME/bin/java` when that exists, else `java` on PATH.
    pub java: Option<PathBuf>,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
    /// `-Xmx` in MiB; 0 leaves the JVM's default.
    pub heap_mb: u64,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            jar: None,
            java: None,
            startup_timeout: Duration::from_secs(60),
            call_timeout: Duration::from_secs(30),
            heap_mb: 0,
        }
    }
}

impl ServerOptions {
    /// What a pooled server must have been started with to serve these options: the same
    /// `java` (resolved now), jar and heap. The time limits are not part of it (the call
    /// limit is set on a server when an env takes it).
    pub fn key(&self) -> ServerKey {
        ServerKey {
            java: self.java.clone().unwrap_or_else(default_java),
            jar: self.jar.clone(),
            heap_mb: self.heap_mb,
        }
    }
}

/// How a server was started (see [`ServerOptions::key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerKey {
    pub java: PathBuf,
    /// `None`: the fetched [`JAR`].
    pub jar: Option<PathBuf>,
    pub heap_mb: u64,
}

/// The `java` that [`ServerOptions::java`] `None` means.
pub fn default_java() -> PathBuf {
    if let Some(home) = std::env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
        let java = Path::new(&home).join("bin").join("java");
        if java.is_file() {
            return java;
        }
    }
    PathBuf::from("java")
}

/// One running simulator process and the connection to it. Dropping it kills the process and
/// waits for it, and removes its scratch folder.
#[derive(Debug)]
pub struct Server {
    child: Child,
    client: Client,
    port: u16,
    scratch: PathBuf,
    key: ServerKey,
    /// A call failed in transport (a timeout, a closed socket, an unreadable answer): the
    /// connection may hold a late answer, so it is never used again.
    broken: bool,
}

/// A scratch folder per process: the simulator writes `object_type_ids.tsv` into its working
/// folder, and its stderr goes to `stderr.log` there.
fn scratch_dir() -> Result<PathBuf, ServerError> {
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "quester-scienceworld-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| ServerError::Start(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

fn free_port() -> Result<u16, ServerError> {
    let l = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| ServerError::Start(format!("no free loopback port: {e}")))?;
    let port = l
        .local_addr()
        .map_err(|e| ServerError::Start(e.to_string()))?
        .port();
    Ok(port)
}

/// The end of the simulator's stderr, for error messages.
fn log_tail(scratch: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open(scratch.join("stderr.log")) {
        let mut bytes = Vec::new();
        let _ = f.read_to_end(&mut bytes);
        let start = bytes.len().saturating_sub(2000);
        text = String::from_utf8_lossy(&bytes[start..]).trim().to_string();
    }
    if text.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended with:\n{text}")
    }
}

/// Makes the child die with this process (Linux: `PR_SET_PDEATHSIG`, sent when the thread that
/// forked exits, so the fork happens on one thread that lives as long as the process).
#[cfg(target_os = "linux")]
fn spawn_tied(mut cmd: Command) -> std::io::Result<Child> {
    use std::os::unix::process::CommandExt;
    use std::sync::mpsc;
    use std::sync::{Mutex, OnceLock};
    type Job = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only calls async-signal-safe
    // functions (prctl, getppid).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may already be gone: then the signal was never armed for it.
            if libc::getppid() as u32 != parent {
                return Err(std::io::Error::other("the parent exited"));
            }
            Ok(())
        });
    }
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("scienceworld-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("spawn the scienceworld spawner thread");
        Mutex::new(tx)
    });
    let (tx, rx) = mpsc::channel();
    sender
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send((cmd, tx))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    rx.recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

#[cfg(not(target_os = "linux"))]
fn spawn_tied(mut cmd: Command) -> std::io::Result<Child> {
    cmd.spawn()
}

impl Server {
    /// Starts a simulator and waits until it answers (at most `startup_timeout`).
    pub fn start(options: &ServerOptions) -> Result<Server, ServerError> {
        let jar = match &options.jar {
            Some(j) => j.clone(),
            None => quester_fetch::fetch(&JAR)?,
        };
        let java = options.java.clone().unwrap_or_else(default_java);
        // A port taken between our probe and the JVM's bind makes the JVM exit: try again.
        let mut last = None;
        for _ in 0..3 {
            match Self::start_once(&java, &jar, options) {
                Ok(s) => return Ok(s),
                Err(e @ ServerError::ExitedEarly { .. }) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.expect("three tries"))
    }

    fn start_once(java: &Path, jar: &Path, options: &ServerOptions) -> Result<Server, ServerError> {
        let scratch = scratch_dir()?;
        let port = free_port()?;
        let stderr = std::fs::File::create(scratch.join("stderr.log"))
            .map_err(|e| ServerError::Start(format!("{}: {e}", scratch.display())))?;
        let mut cmd = Command::new(java);
        if options.heap_mb > 0 {
            cmd.arg(format!("-Xmx{}m", options.heap_mb));
        }
        cmd.arg("-jar")
            .arg(jar)
            .arg(port.to_string())
            .current_dir(&scratch)
            .stdin(Stdio::null())
            // It prints every step; nobody reads it, and a full pipe would block it.
            .stdout(Stdio::null())
            .stderr(stderr);
        let child = spawn_tied(cmd).map_err(|e| {
            let _ = std::fs::remove_dir_all(&scratch);
            if e.kind() == std::io::ErrorKind::NotFound
                || e.kind() == std::io::ErrorKind::PermissionDenied
            {
                ServerError::NoJava {
                    java: java.display().to_string(),
                    source: e,
                }
            } else {
                ServerError::Start(format!("{}: {e}", java.display()))
            }
        })?;
        // From here on the Drop of `guard` kills the process on every early return.
        let mut guard = Guard {
            child: Some(child),
            scratch: scratch.clone(),
        };
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        let deadline = Instant::now() + options.startup_timeout;
        loop {
            let child = guard.child.as_mut().expect("held");
            if let Ok(Some(status)) = child.try_wait() {
                return Err(ServerError::ExitedEarly {
                    pid: child.id(),
                    status: status.to_string(),
                    log: log_tail(&scratch),
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ServerError::StartTimeout {
                    timeout: options.startup_timeout,
                    log: log_tail(&scratch),
                });
            }
            let attempt =
                Client::connect(addr, left.min(Duration::from_secs(2))).and_then(|mut c| {
                    c.call_str("getPossibleSimplifications", &[])?;
                    c.set_timeout(options.call_timeout);
                    Ok(c)
                });
            match attempt {
                Ok(client) => {
                    let child = guard.child.take().expect("held");
                    return Ok(Server {
                        child,
                        client,
                        port,
                        scratch,
                        key: ServerKey {
                            java: java.to_path_buf(),
                            jar: options.jar.clone(),
                            heap_mb: options.heap_mb,
                        },
                        broken: false,
                    });
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// The Java process id (tests kill it to check recovery).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether the process still runs.
    pub fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Whether the process still runs and its connection is in order (no call on it failed
    /// in transport).
    pub fn is_usable(&mut self) -> bool {
        !self.broken && self.is_alive()
    }

    /// How it was started.
    pub fn key(&self) -> &ServerKey {
        &self.key
    }

    /// The time limit of each call from now on.
    pub fn set_call_timeout(&mut self, timeout: Duration) {
        self.client.set_timeout(timeout);
    }

    /// A cheap liveness check: usable, and a trivial call (`getPossibleSimplifications`)
    /// answers within `timeout`. A server that fails it is marked unusable.
    pub fn ping(&mut self, timeout: Duration) -> bool {
        if !self.is_usable() {
            return false;
        }
        let before = self.client.timeout();
        self.client.set_timeout(timeout);
        let ok = self.call_str("getPossibleSimplifications", &[]).is_ok();
        self.client.set_timeout(before);
        if !ok {
            self.broken = true;
        }
        ok
    }

    /// Runs `f` on the connection after checking that the process runs and the connection is
    /// in order; a transport error marks the connection unusable.
    fn with_client<T>(
        &mut self,
        f: impl FnOnce(&mut Client) -> Result<T, Py4jError>,
    ) -> Result<T, ServerError> {
        if !self.is_alive() || self.broken {
            return Err(ServerError::Dead {
                pid: self.child.id(),
            });
        }
        f(&mut self.client).map_err(|e| {
            if e.is_transport() {
                self.broken = true;
            }
            ServerError::Protocol(e)
        })
    }

    /// `load(task, variation, simplifications, goldPath)`; an error text the simulator
    /// answers with (`ERROR: ...`) is an error.
    pub fn load(
        &mut self,
        task: &str,
        variation: i32,
        simplifications: &str,
        gold_path: bool,
    ) -> Result<(), ServerError> {
        let answer = self.with_client(|c| {
            c.call_str(
                "load",
                &[
                    Arg::Str(task),
                    Arg::Int(variation),
                    Arg::Str(simplifications),
                    Arg::Bool(gold_path),
                ],
            )
        })?;
        if answer.trim().is_empty() {
            Ok(())
        } else {
            Err(ServerError::Simulator(answer.trim().to_string()))
        }
    }

    /// The variations of a split of the loaded task: `train`, `dev` or `test`.
    pub fn variations(&mut self, split: &str) -> Result<Vec<i32>, ServerError> {
        let method = match split {
            "train" => "getVariationsTrain",
            "dev" => "getVariationsDev",
            _ => "getVariationsTest",
        };
        self.with_client(|c| c.call_list(method, &[]))?
            .into_iter()
            .map(|v| match v {
                Value::Int(i) => Ok(i),
                other => Err(ServerError::Simulator(format!(
                    "{method} listed {other:?}, not a variation number"
                ))),
            })
            .collect()
    }

    /// The gold action sequence of the loaded task (it must have been loaded with
    /// `gold_path = true`).
    pub fn gold_actions(&mut self) -> Result<Vec<String>, ServerError> {
        self.with_client(|c| c.call_list("getGoldActionSequence", &[]))?
            .into_iter()
            .map(|v| match v {
                Value::Str(s) => Ok(s),
                other => Err(ServerError::Simulator(format!(
                    "getGoldActionSequence listed {other:?}"
                ))),
            })
            .collect()
    }

    pub fn call_str(&mut self, method: &str, args: &[Arg]) -> Result<String, ServerError> {
        self.with_client(|c| c.call_str(method, args))
    }

    pub fn call_f64(&mut self, method: &str) -> Result<f64, ServerError> {
        self.with_client(|c| c.call_f64(method, &[]))
    }

    pub fn call_i64(&mut self, method: &str) -> Result<i64, ServerError> {
        self.with_client(|c| c.call_i64(method, &[]))
    }

    pub fn call_bool(&mut self, method: &str) -> Result<bool, ServerError> {
        self.with_client(|c| c.call_bool(method, &[]))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// Kills (and reaps) a process that never became a [`Server`].
struct Guard {
    child: Option<Child>,
    scratch: PathBuf,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
            let _ = std::fs::remove_dir_all(&self.scratch);
        }
    }
}
