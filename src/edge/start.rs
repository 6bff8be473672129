//! Starting and stopping the edge: load the config (or the embedded default), prepare TLS,
//! start the embedded engine, build the registry, bind the listeners, start one pinned
//! worker per core, print where everything answers, then run the control loop: SIGHUP or a
//! change of the config file reloads the registry; SIGTERM/SIGINT drains and exits 0.
//!
//! Must not touch: request handling (see `session`).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::certs;
use super::control::{self, ControlSettings};
use super::core::{Limits, Shared};
use super::engine_child::EngineChild;
use super::keyfile;
use super::sock::reuseport_listeners;
use super::workers::{run_worker, Driver, WorkerListeners};
use super::ServeArgs;
use crate::config::{embedded, Config};
use crate::metrics::MetricsHub;
use crate::registry::{Registry, Snapshot};

/// Runs the edge until SIGTERM/SIGINT. Errors are for the operator, one line each.
pub fn run(args: ServeArgs) -> Result<(), String> {
    // Handlers first: a signal that arrives once `listening` is printed (or during start)
    // must be seen by the control loop, not kill the process or be lost.
    let signals = Signals::new([SIGTERM, SIGINT, SIGHUP]).map_err(|e| format!("signals: {e}"))?;
    let driver = Driver::choose(&args.driver)?;
    let (mut config, config_path, embedded) = match &args.config {
        Some(p) => (
            Config::load(p).map_err(|e| e.to_string())?,
            p.clone(),
            false,
        ),
        None => {
            let (c, p, _) =
                embedded::load_or_create(Path::new("./data")).map_err(|e| e.to_string())?;
            (c, p, true)
        }
    };
    std::fs::create_dir_all(&config.edge.data_dir)
        .map_err(|e| format!("data dir {}: {e}", config.edge.data_dir.display()))?;
    let tls = match config.edge.https {
        Some(_) => Some(tls_config(&config)?),
        None => None,
    };
    let engine = match &config.engine {
        Some(e) => Some(EngineChild::start(e.listen, &e.data_dir)?),
        None => None,
    };
    if let (Some(child), Some(e)) = (&engine, config.engine.as_mut()) {
        e.listen = child.addr; // a port 0 became a real port
    }
    let key = keyfile::load_or_create(&config.edge.data_dir)?;
    let sealer = Arc::new(crate::tenancy::IdSealer::new(&key));
    let registry = Arc::new(Registry::new(
        Snapshot::build(&config, None, 1, Instant::now(), &key).map_err(|e| e.to_string())?,
        key,
    ));
    let threads = args
        .threads
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .max(1);
    let (per_worker, http, https) = bind(&config, threads)?;
    let shared = Arc::new(Shared {
        registry: registry.clone(),
        limits: Limits::from_config(&config.edge),
        tls,
        metrics: Arc::new(MetricsHub::default()),
        access_log: config.access_log_target(),
        draining: AtomicBool::new(false),
        sealer,
    });
    control::probe_unready(&registry);
    let stop_control = Arc::new(AtomicBool::new(false));
    let settings = ControlSettings {
        metering_interval: config.edge.metering_interval.0,
        disable_factor: config.edge.disable_factor,
    };
    let control = control::spawn(registry.clone(), settings, stop_control.clone())
        .map_err(|e| format!("control thread: {e}"))?;
    let workers = spawn_workers(driver, threads, &shared, per_worker)?;
    print_banner(
        &config,
        driver,
        threads,
        http,
        https,
        embedded,
        engine.as_ref().map(|e| e.addr),
    );
    control_loop(signals, &config_path, &config, &registry, &shared, &workers)?;
    for w in workers {
        let _ = w.join();
    }
    stop_control.store(true, Ordering::Release);
    let _ = control.join();
    if let Some(e) = engine {
        e.stop(Duration::from_secs(10));
    }
    println!("searchgate: stopped");
    Ok(())
}

fn tls_config(config: &Config) -> Result<Arc<rustls::ServerConfig>, String> {
    let (cert, key) = match (&config.edge.tls_cert, &config.edge.tls_key) {
        (Some(c), Some(k)) => (c.clone(), k.clone()),
        _ => {
            let mut regions: Vec<String> =
                config.clusters.iter().map(|c| c.region.clone()).collect();
            regions.sort();
            regions.dedup();
            let names = certs::leaf_names(&config.edge.domain, &regions);
            certs::issue_leaf(&config.edge.data_dir, &names)
                .map_err(|e| format!("TLS certificate: {e}"))?
        }
    };
    certs::server_config(&cert, &key).map_err(|e| format!("TLS: {e}"))
}

type Bound = (Vec<WorkerListeners>, Option<SocketAddr>, Option<SocketAddr>);

fn bind(config: &Config, threads: usize) -> Result<Bound, String> {
    let mut per_worker: Vec<WorkerListeners> =
        (0..threads).map(|_| WorkerListeners::default()).collect();
    let mut bound = [None, None];
    for (i, addr) in [config.edge.http, config.edge.https]
        .into_iter()
        .enumerate()
    {
        let Some(addr) = addr else { continue };
        let (ls, actual) = reuseport_listeners(addr, threads)
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        for (w, l) in per_worker.iter_mut().zip(ls) {
            if i == 0 {
                w.http = Some(l);
            } else {
                w.https = Some(l);
            }
        }
        bound[i] = Some(actual);
    }
    Ok((per_worker, bound[0], bound[1]))
}

fn spawn_workers(
    driver: Driver,
    threads: usize,
    shared: &Arc<Shared>,
    listeners: Vec<WorkerListeners>,
) -> Result<Vec<JoinHandle<()>>, String> {
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let mut handles = Vec::with_capacity(threads);
    for (i, l) in listeners.into_iter().enumerate() {
        let core_id = (!cores.is_empty()).then(|| cores[i % cores.len()]);
        let shared = shared.clone();
        let h = std::thread::Builder::new()
            .name(format!("edge-{i}"))
            .spawn(move || run_worker(i, core_id, driver, shared, l))
            .map_err(|e| format!("cannot start worker {i}: {e}"))?;
        handles.push(h);
    }
    Ok(handles)
}

fn print_banner(
    config: &Config,
    driver: Driver,
    threads: usize,
    http: Option<SocketAddr>,
    https: Option<SocketAddr>,
    embedded: bool,
    engine: Option<SocketAddr>,
) {
    let fmt = |a: Option<SocketAddr>| a.map(|a| a.to_string()).unwrap_or_else(|| "off".into());
    println!(
        "searchgate: driver {}, {threads} worker thread(s), each pinned to a core",
        driver.name()
    );
    println!(
        "searchgate: listening http={} https={}",
        fmt(http),
        fmt(https)
    );
    if let Some(e) = engine {
        println!("searchgate: embedded engine on {e}");
    }
    let ca = config.edge.data_dir.join(certs::CA_CERT);
    for c in &config.clusters {
        // Only the embedded default's own demo credentials are shown; configured passwords never are.
        let pass = if embedded {
            c.password.expose().to_string()
        } else {
            "<password>".into()
        };
        let (scheme, addr) = match (https, http) {
            (Some(a), _) => ("https", a),
            (None, Some(a)) => ("http", a),
            (None, None) => continue,
        };
        let port = addr.port();
        println!(
            "searchgate: cluster {} ({:?}, plan {}, mode {:?})",
            c.id, c.class, c.plan, c.mode
        );
        println!(
            "  {scheme}://{}:{pass}@{}.{}.{}:{port}",
            c.username, c.hostname, c.region, config.edge.domain
        );
        if config.edge.route_by_username {
            println!(
                "  {scheme}://{}:{pass}@localhost:{port}   (routed by username)",
                c.username
            );
        }
        if embedded && scheme == "https" {
            println!(
                "  try: curl --cacert {} https://{}:{pass}@localhost:{port}/",
                ca.display(),
                c.username
            );
        }
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Waits for signals and config changes until shutdown; then sets `draining`.
fn control_loop(
    mut signals: Signals,
    path: &Path,
    first: &Config,
    registry: &Registry,
    shared: &Shared,
    workers: &[JoinHandle<()>],
) -> Result<(), String> {
    let mut seen = modified(path);
    let mut current = first.clone();
    loop {
        for sig in signals.pending() {
            match sig {
                SIGHUP => reload(path, &mut current, registry, "SIGHUP"),
                _ => {
                    println!("searchgate: shutting down: finishing requests in flight");
                    shared.draining.store(true, Ordering::Release);
                    return Ok(());
                }
            }
        }
        let now = modified(path);
        if now != seen {
            seen = now;
            reload(path, &mut current, registry, "file change");
        }
        if workers.iter().all(|w| w.is_finished()) {
            return Err("every worker stopped".into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn reload(path: &Path, current: &mut Config, registry: &Registry, why: &str) {
    match Config::load(path) {
        Err(e) => eprintln!("searchgate: reload ({why}) refused, keeping the running config: {e}"),
        Ok(mut next) => {
            next.engine = current.engine.clone(); // the engine's address is fixed while running
            if next.edge.https != current.edge.https || next.edge.http != current.edge.http {
                eprintln!("searchgate: listener changes take effect at the next restart");
            }
            match registry.apply(&next, Instant::now()) {
                Ok(gen) => {
                    println!(
                        "searchgate: reloaded ({why}): {} cluster(s), generation {gen}",
                        next.clusters.len()
                    );
                    *current = next;
                }
                Err(e) => {
                    eprintln!("searchgate: reload ({why}) refused, keeping the running config: {e}")
                }
            }
        }
    }
}
