//! The embedded engine as a supervised child process (`searchgate engine ...`): started
//! before the edge accepts, restarted if it dies, stopped (SIGTERM, then SIGKILL) when the
//! edge stops, and killed by the kernel if the edge itself dies.
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

fn spawn(addr: SocketAddr, data_dir: &Path) -> std::io::Result<Child> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg("engine")
        .arg("--listen")
        .arg(addr.to_string())
        .arg("--data-dir")
        .arg(data_dir);
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
    /// Starts the engine on `listen` (port 0: a free port) with `data_dir`, waits until it
    /// accepts connections, and supervises it.
    pub fn start(listen: SocketAddr, data_dir: &Path) -> Result<EngineChild, String> {
        let addr = concrete(listen).map_err(|e| format!("engine address {listen}: {e}"))?;
        std::fs::create_dir_all(data_dir)
            .map_err(|e| format!("engine data dir {}: {e}", data_dir.display()))?;
        let child =
            spawn(addr, data_dir).map_err(|e| format!("cannot start the embedded engine: {e}"))?;
        let child = Arc::new(Mutex::new(child));
        if let Err(e) = wait_ready(&child, addr) {
            let _ = child.lock().unwrap_or_else(|p| p.into_inner()).kill();
            return Err(e);
        }
        let stopping = Arc::new(AtomicBool::new(false));
        let supervisor = {
            let (child, stopping, dir) = (child.clone(), stopping.clone(), data_dir.to_path_buf());
            std::thread::Builder::new()
                .name("engine-supervisor".into())
                .spawn(move || supervise(child, stopping, addr, dir))
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

fn supervise(child: Arc<Mutex<Child>>, stopping: Arc<AtomicBool>, addr: SocketAddr, dir: PathBuf) {
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
        match spawn(addr, &dir) {
            Ok(new) => {
                *child.lock().unwrap_or_else(|p| p.into_inner()) = new;
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
