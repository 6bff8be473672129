//! The worker threads as a supervised crew: started at boot, one per core (pinned when
//! asked), and started again when one dies while the edge is not shutting down. A worker
//! that panicked reports it at once (`workers::Fault`) and retires (its connections get a
//! moment to finish) while its replacement already accepts on the same sockets.
//!
//! The crew keeps every worker's listening sockets; a worker runs on duplicates of them
//! (`dup(2)`: the same socket), so a worker that dies closes only its duplicates and its
//! sockets stay in their SO_REUSEPORT groups: connections the kernel queued on them wait
//! for the worker that replaces it instead of being reset, and the group keeps its size.
//! When shutdown begins the crew closes its own copies, so each socket closes once its
//! worker stops accepting (new connections are refused, not queued forever).
//!
//! Must not touch: what a worker does (`workers`), request handling.

use std::sync::Arc;
use std::thread::JoinHandle;

use super::core::Shared;
use super::workers::{run_worker, Driver, Fault, WorkerListeners};
use crate::metrics::faults::panic_message;

/// One worker: where it runs, its sockets, its current thread.
struct Member {
    index: usize,
    core_id: Option<core_affinity::CoreId>,
    listeners: WorkerListeners,
    thread: Option<JoinHandle<()>>,
    /// Set by the worker when it panicked (its message).
    fault: Fault,
}

/// Every worker of the edge.
pub struct Crew {
    members: Vec<Member>,
    /// Threads of workers that panicked, finishing their connections.
    retiring: Vec<JoinHandle<()>>,
    driver: Driver,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Crew {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Crew")
            .field("workers", &self.members.len())
            .finish()
    }
}

impl Crew {
    /// Starts one worker per entry of `listeners` (pinned to the cores in turn when `pin`).
    pub fn start(
        driver: Driver,
        pin: bool,
        shared: &Arc<Shared>,
        listeners: Vec<WorkerListeners>,
    ) -> Result<Crew, String> {
        let cores = if pin {
            core_affinity::get_core_ids().unwrap_or_default()
        } else {
            Vec::new()
        };
        let mut crew = Crew {
            members: Vec::with_capacity(listeners.len()),
            retiring: Vec::new(),
            driver,
            shared: shared.clone(),
        };
        for (index, listeners) in listeners.into_iter().enumerate() {
            let core_id = (!cores.is_empty()).then(|| cores[index % cores.len()]);
            let mut m = Member {
                index,
                core_id,
                listeners,
                thread: None,
                fault: Fault::default(),
            };
            crew.launch(&mut m)?;
            crew.members.push(m);
        }
        Ok(crew)
    }

    /// Starts `m`'s thread on duplicates of its sockets.
    fn launch(&self, m: &mut Member) -> Result<(), String> {
        let i = m.index;
        let sockets = m
            .listeners
            .duplicate()
            .map_err(|e| format!("worker {i}: cannot duplicate its listening sockets: {e}"))?;
        m.fault = Fault::default();
        let (core_id, driver, shared) = (m.core_id, self.driver, self.shared.clone());
        let fault = m.fault.clone();
        let h = std::thread::Builder::new()
            .name(format!("edge-{i}"))
            .spawn(move || run_worker(i, core_id, driver, shared, sockets, fault))
            .map_err(|e| format!("cannot start worker {i}: {e}"))?;
        m.thread = Some(h);
        Ok(())
    }

    /// Starts again each worker whose thread ended (unless shutdown began): its panic is
    /// logged and counted. Returns how many were restarted.
    pub fn supervise(&mut self) -> usize {
        if self.shared.draining() {
            return 0;
        }
        let mut restarted = 0;
        self.retiring.retain(|t| !t.is_finished());
        for i in 0..self.members.len() {
            let m = &mut self.members[i];
            let fault = m.fault.lock().unwrap_or_else(|p| p.into_inner()).take();
            let ended = m.thread.as_ref().is_none_or(JoinHandle::is_finished);
            if fault.is_none() && !ended {
                continue;
            }
            let why = match (fault, m.thread.take()) {
                (Some(message), Some(t)) => {
                    self.retiring.push(t);
                    message
                }
                (None, Some(t)) => match t.join() {
                    Err(payload) => panic_message(&*payload).to_string(),
                    Ok(()) => "its runtime returned".to_string(),
                },
                (Some(message), None) => message,
                (None, None) => "it could not be started".to_string(),
            };
            eprintln!("searchgate: worker {i} died ({why}); starting it again");
            let mut m = std::mem::replace(&mut self.members[i], placeholder(i));
            match self.launch(&mut m) {
                Ok(()) => {
                    self.shared.metrics.faults.worker_restarted();
                    restarted += 1;
                }
                Err(e) => eprintln!("searchgate: {e}; trying again shortly"),
            }
            self.members[i] = m;
        }
        restarted
    }

    /// Whether no worker is running (retiring ones aside).
    pub fn all_stopped(&self) -> bool {
        self.members
            .iter()
            .all(|m| m.thread.as_ref().is_none_or(JoinHandle::is_finished))
    }

    /// Shutdown began: closes the crew's copies of the sockets (each closes for good when
    /// its worker stops accepting).
    pub fn close_listeners(&mut self) {
        for m in &mut self.members {
            m.listeners = WorkerListeners::default();
        }
    }

    /// Waits for every worker to finish.
    pub fn join(self) {
        for t in self.retiring {
            let _ = t.join();
        }
        for m in self.members {
            if let Some(t) = m.thread {
                let _ = t.join();
            }
        }
    }
}

fn placeholder(index: usize) -> Member {
    Member {
        index,
        core_id: None,
        listeners: WorkerListeners::default(),
        thread: None,
        fault: Fault::default(),
    }
}
