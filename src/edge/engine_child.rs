//! The embedded engine as a supervised child process (`searchgate engine ...`): started
//! before the edge accepts, restarted if it dies, stopped (SIGTERM, then SIGKILL) when the
//! edge stops, and killed by the kernel if the edge itself dies.
//!
//! The child is the running executable itself, reached through `/proc/self/exe` on Linux:
//! that path opens the edge's own binary even after an upgrade replaced or deleted the file
//! it was started from (whose name then reads `... (deleted)`), so a restart never fails
//! for want of the file, and edge and engine stay of one version. Each restart is counted
//! (`searchgate_engine_restarts_total`).
//!
//! The edge reaches it over HTTP like any upstream; this module only manages the process.
//! Must not touch: the engine's code (never imported), request handling.

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::config::EngineConfig;
use crate::metrics::MetricsHub;

/// How long a starting engine may take to accept connections (it replays its log first).
const READY_TIMEOUT: Duration = Duration::from_secs(300);

/// A running, supervised engine process.
#[derive(Debug)]
pub struct EngineChild {
    child: Arc<Mutex<Child>>,
    stopping: Arc<AtomicBool>,
    supervisor: Option<JoinHandle<()>>,
    pub addr: SocketAddr,
}

/// How the child is started (the same each time it is started again).
#[derive(Debug, Clone)]
struct Launch {
    addr: SocketAddr,
    data_dir: PathBuf,
    /// Its limit of open shard contexts (`[engine] max_open_contexts`).
    max_open_contexts: u64,
    /// Its limit of connections (`[engine] max_connections`).
    max_connections: u64,
    /// Its memory budgets in MB (`[engine] breaker_request_mb`, `breaker_total_mb`).
    breakers: (u64, u64),
    /// Pass the test-only fault injection on (`[debug] panic_hooks`).
    debug_hooks: bool,
}

/// The running executable: `/proc/self/exe` where there is one (it still opens the binary
/// this process runs after the file was replaced), else what `current_exe` says.
fn own_executable() -> std::io::Result<PathBuf> {
    let proc_exe = Path::new("/proc/self/exe");
    if proc_exe.exists() {
        return Ok(proc_exe.to_path_buf());
    }
    std::env::current_exe()
}

fn spawn(l: &Launch) -> std::io::Result<Child> {
    let mut cmd = Command::new(own_executable()?);
    cmd.arg("engine")
        .arg("--listen")
        .arg(l.addr.to_string())
        .arg("--data-dir")
        .arg(&l.data_dir)
        .arg("--max-open-scroll-context")
        .arg(l.max_open_contexts.to_string())
        .arg("--max-connections")
        .arg(l.max_connections.to_string())
        .arg("--breaker-request-mb")
        .arg(l.breakers.0.to_string())
        .arg("--breaker-total-mb")
        .arg(l.breakers.1.to_string());
    if l.debug_hooks {
        cmd.arg("--debug-panic-hooks");
    }
    cmd.stdin(Stdio::null());
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the child between fork and exec and only calls
        // prctl(2), which is async-signal-safe and touches no memory of ours.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd.spawn()
}

/// Waits until `addr` accepts connections or the child exits.
fn wait_ready(child: &Mutex<Child>, addr: SocketAddr) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < READY_TIMEOUT {
        if let Ok(Some(status)) = child.lock().unwrap_or_else(|p| p.into_inner()).try_wait() {
            return Err(format!(
                "the embedded engine exited during start ({status})"
            ));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "the embedded engine did not listen on {addr} within {READY_TIMEOUT:?}"
    ))
}

/// A free loopback port for `addr` when its port is 0.
fn concrete(addr: SocketAddr) -> std::io::Result<SocketAddr> {
    if addr.port() != 0 {
        return Ok(addr);
    }
    let probe = std::net::TcpListener::bind(addr)?;
    probe.local_addr()
}

impl EngineChild {
    /// Starts the engine of `[engine]` (port 0: a free port), waits until it accepts
    /// connections, and supervises it (its restarts counted in `metrics`).
    pub fn start(
        config: &EngineConfig,
        debug_hooks: bool,
        metrics: Arc<MetricsHub>,
    ) -> Result<EngineChild, String> {
        let listen = config.listen;
        let data_dir = &config.data_dir;
        let addr = concrete(listen).map_err(|e| format!("engine address {listen}: {e}"))?;
        std::fs::create_dir_all(data_dir)
            .map_err(|e| format!("engine data dir {}: {e}", data_dir.display()))?;
        let launch = Launch {
            addr,
            data_dir: data_dir.clone(),
            max_open_contexts: config.max_open_contexts,
            max_connections: config.max_connections,
            breakers: (config.breaker_request_mb, config.breaker_total_mb),
            debug_hooks,
        };
        let child = spawn(&launch).map_err(|e| format!("cannot start the embedded engine: {e}"))?;
        let child = Arc::new(Mutex::new(child));
        if let Err(e) = wait_ready(&child, addr) {
            let _ = child.lock().unwrap_or_else(|p| p.into_inner()).kill();
            return Err(e);
        }
        let stopping = Arc::new(AtomicBool::new(false));
        let supervisor = {
            let (child, stopping) = (child.clone(), stopping.clone());
            std::thread::Builder::new()
                .name("engine-supervisor".into())
                .spawn(move || supervise(child, stopping, launch, metrics))
                .map_err(|e| e.to_string())?
        };
        Ok(EngineChild {
            child,
            stopping,
            supervisor: Some(supervisor),
            addr,
        })
    }

    /// Stops the engine: SIGTERM, then SIGKILL after `grace`.
    pub fn stop(mut self, grace: Duration) {
        self.stopping.store(true, Ordering::Release);
        if let Some(s) = self.supervisor.take() {
            let _ = s.join();
        }
        let mut child = self.child.lock().unwrap_or_else(|p| p.into_inner());
        terminate(&mut child, grace);
    }
}

fn terminate(child: &mut Child, grace: Duration) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a pid we spawned and still own (not yet reaped), and a valid
        // signal number; it touches no memory.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let end = Instant::now() + grace;
    while Instant::now() < end {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn supervise(
    child: Arc<Mutex<Child>>,
    stopping: Arc<AtomicBool>,
    launch: Launch,
    metrics: Arc<MetricsHub>,
) {
    let addr = launch.addr;
    let mut backoff = Duration::from_millis(250);
    while !stopping.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(100));
        let exited = child.lock().unwrap_or_else(|p| p.into_inner()).try_wait();
        let Ok(Some(status)) = exited else { continue };
        if stopping.load(Ordering::Acquire) {
            return;
        }
        eprintln!(
            "searchgate: the embedded engine stopped ({status}); restarting it in {backoff:?}"
        );
        std::thread::sleep(backoff);
        match spawn(&launch) {
            Ok(new) => {
                *child.lock().unwrap_or_else(|p| p.into_inner()) = new;
                metrics.faults.engine_restarted();
                if wait_ready(&child, addr).is_ok() {
                    backoff = Duration::from_millis(250);
                    eprintln!("searchgate: the embedded engine is back on {addr}");
                    continue;
                }
            }
            Err(e) => eprintln!("searchgate: cannot restart the embedded engine: {e}"),
        }
        backoff = (backoff * 2).min(Duration::from_secs(10));
    }
}
