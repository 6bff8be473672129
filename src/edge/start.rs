//! Starting and stopping the edge: load the config (or the embedded default), prepare TLS,
//! start the embedded engine, open the control plane (its store, the file's seed applied
//! through its commands), bind the listeners, start one pinned worker per core and the
//! admin API, print where everything answers, then run the control loop: SIGHUP or a
//! change of the config file applies the file's seed again, maintenance windows end at
//! their `until`; SIGTERM/SIGINT drains and exits 0.
//!
//! Must not touch: request handling (see `session`).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::certs;
use super::control::{self, ControlSettings};
use super::core::{Limits, Shared};
use super::crew::Crew;
use super::engine_child::EngineChild;
use super::keyfile;
use super::sock::reuseport_listeners;
use super::workers::{Driver, WorkerListeners};
use super::ServeArgs;
use crate::config::{embedded, AdminConfig, Config, DEBUG_HOOKS_ENV};
use crate::control::api::observe::Observe;
use crate::control::boot;
use crate::control::follow;
use crate::control::plane::{lock, SharedPlane};
use crate::metrics::{intervallog, MetricsHub};
use crate::nodes::{checker, NodeBook};
use crate::policy::engine_room;

/// Where `[edge] latency_log` writes, under the data directory.
pub const LATENCY_LOG_DIR: &str = "latency";

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
    let allowed = std::env::var(DEBUG_HOOKS_ENV).ok();
    let debug_hooks = config.debug.hooks_enabled(allowed.as_deref())?;
    if debug_hooks {
        eprintln!("searchgate: WARNING: [debug] panic_hooks is on: requests can inject panics (tests only)");
    }
    std::fs::create_dir_all(&config.edge.data_dir)
        .map_err(|e| format!("data dir {}: {e}", config.edge.data_dir.display()))?;
    let metrics = Arc::new(MetricsHub::default().recording(config.edge.record_metrics));
    let engine = match &config.engine {
        Some(e) => Some(EngineChild::start(e, debug_hooks, metrics.clone())?),
        None => None,
    };
    if let (Some(child), Some(e)) = (&engine, config.engine.as_mut()) {
        e.listen = child.addr; // a port 0 became a real port
    }
    if embedded && config.admin.is_none() {
        config.admin = Some(AdminConfig::default()); // the embedded default serves it
    }
    let mut store = boot::open_store(&config)?;
    let key = match config.store.url {
        Some(_) => keyfile::shared(&config.edge.data_dir, &mut *store)?,
        None => keyfile::load_or_create(&config.edge.data_dir)?,
    };
    let sealer = Arc::new(crate::tenancy::IdSealer::new(&key));
    let plane = boot::open(&config, &key, store)?;
    let follower = match &config.store.url {
        Some(url) => {
            let bell = crate::control::pg::Doorbell::new(url.expose())?;
            let poll = config.fleet.poll_interval.0;
            Some(
                follow::spawn(plane.clone(), bell, poll, metrics.clone())
                    .map_err(|e| format!("follower thread: {e}"))?,
            )
        }
        None => None,
    };
    let registry = lock(&plane).registry().clone();
    let fleet = match config.fleet.peer_listen {
        Some(addr) => Some(super::fleet_start::start(
            &config, addr, &key, &registry, &metrics,
        )?),
        None => None,
    };
    let tls = match config.edge.https {
        Some(_) => Some(tls_config(&config, &plane)?),
        None => None,
    };
    let threads = args
        .threads
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .max(1);
    let (per_worker, http, https) = bind(&config, threads)?;
    let nodes = Arc::new(NodeBook::new(config.upstream_health.settings()?));
    let resolver = lock(&plane).resolver().clone();
    let checker = checker::spawn(nodes.clone(), registry.clone(), resolver)
        .map_err(|e| format!("health-check thread: {e}"))?;
    let shared = Arc::new(Shared {
        registry: registry.clone(),
        limits: Limits::from_config(&config.edge),
        tls,
        metrics,
        access_log: config.access_log_target(),
        draining: AtomicBool::new(false),
        sealer,
        debug_hooks,
        nodes: nodes.clone(),
        fleet: fleet.as_ref().map(|f| f.hook.clone()),
    });
    control::probe_unready(&registry, &plane);
    let stop_control = Arc::new(AtomicBool::new(false));
    let settings = ControlSettings {
        metering_interval: config.edge.metering_interval.0,
        usage_interval: config.billing.usage_interval.0,
        usage_retention: config.billing.usage_retention.0,
        node: config.fleet.node_id(),
    };
    let control = control::spawn(
        plane.clone(),
        settings,
        shared.metrics.clone(),
        nodes.clone(),
        stop_control.clone(),
    )
    .map_err(|e| format!("control thread: {e}"))?;
    let webhook = match &config.billing.webhook {
        Some(url) => Some(
            crate::control::webhook::spawn(
                plane.clone(),
                url.clone(),
                config.billing.webhook_timeout.0,
            )
            .map_err(|e| format!("webhook thread: {e}"))?,
        ),
        None => None,
    };
    if let Some(addr) = config.edge.metrics {
        let bound = super::metrics_http::spawn(addr, shared.clone())
            .map_err(|e| format!("cannot listen on {addr} for metrics: {e}"))?;
        println!("searchgate: metrics http://{bound}/metrics");
    }
    let latency_log = start_latency_log(&config, &shared)?;
    let mut workers = Crew::start(driver, config.edge.pin_workers, &shared, per_worker)?;
    let admin = match &config.admin {
        Some(a) => {
            let tls = admin_tls(a, &config, &plane, &shared)?;
            let env = boot::api_env(&config, http, https);
            Some(boot::start_admin(
                a,
                &config.edge.data_dir,
                plane.clone(),
                env,
                tls,
                Observe {
                    hub: shared.metrics.clone(),
                    registry: registry.clone(),
                    nodes: nodes.clone(),
                },
                debug_hooks,
            )?)
        }
        None => None,
    };
    print_banner(
        &config,
        &plane,
        driver,
        threads,
        (http, https),
        embedded,
        engine.as_ref().map(|e| e.addr),
    );
    if let Some(a) = &admin {
        let token = match &a.token_file {
            Some(f) => format!("token in {}", f.display()),
            None => "token from the configuration file".into(),
        };
        println!("searchgate: admin API on {} ({token})", a.url);
        if embedded {
            println!("  try: cargo run --release -- admin clusters list");
        }
    }
    let room = engine
        .as_ref()
        .zip(config.engine.as_ref())
        .map(|(e, c)| (e.addr, c.max_connections));
    let ended = control_loop(
        signals,
        &config_path,
        &config,
        &plane,
        &shared,
        &mut workers,
        room,
    );
    workers.close_listeners();
    ended?;
    if let Some(a) = admin {
        a.stop();
    }
    workers.join();
    if let Some(f) = fleet {
        f.stop(); // after this node's own requests ended: then its clusters move
    }
    if let Some(log) = latency_log {
        log.stop(); // after the workers' last hand-over: the open minute is written too
    }
    checker.stop();
    stop_control.store(true, Ordering::Release);
    let _ = control.join();
    if let Some(w) = webhook {
        w.stop();
    }
    if let Some(f) = follower {
        f.stop();
    }
    lock(&plane).release_lease();
    if let Some(e) = engine {
        e.stop(Duration::from_secs(10));
    }
    println!("searchgate: stopped");
    Ok(())
}

/// Starts the interval-log writer when `[edge] latency_log` is on: each closed minute of
/// each cluster appended to `<data_dir>/latency/<cluster>.hlog`, looked for every second.
fn start_latency_log(config: &Config, shared: &Shared) -> Result<Option<LatencyLog>, String> {
    if !config.edge.latency_log {
        return Ok(None);
    }
    let dir = config.edge.data_dir.join(LATENCY_LOG_DIR);
    let stop = Arc::new(AtomicBool::new(false));
    let every = Duration::from_secs(1);
    let thread = intervallog::spawn(shared.metrics.clone(), dir.clone(), every, stop.clone())
        .map_err(|e| format!("latency log in {}: {e}", dir.display()))?;
    println!("searchgate: latency logs in {}", dir.display());
    Ok(Some(LatencyLog { stop, thread }))
}

/// The running interval-log writer.
struct LatencyLog {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl LatencyLog {
    /// Closes the window's open minute, writes it, and ends the writer.
    fn stop(self) {
        self.stop.store(true, Ordering::Release);
        self.thread.thread().unpark();
        let _ = self.thread.join();
    }
}

/// The admin listener's TLS: its own certificate, or the edge's (generated ones name
/// `localhost` and the loopback addresses too); `None` unless `[admin] tls = true`.
fn admin_tls(
    a: &AdminConfig,
    config: &Config,
    plane: &SharedPlane,
    shared: &Shared,
) -> Result<Option<Arc<rustls::ServerConfig>>, String> {
    if !a.tls {
        return Ok(None);
    }
    match (&a.tls_cert, &a.tls_key, &shared.tls) {
        (Some(c), Some(k), _) => certs::server_config(c, k)
            .map(Some)
            .map_err(|e| format!("admin TLS: {e}")),
        (_, _, Some(edge)) => Ok(Some(edge.clone())),
        _ => tls_config(config, plane).map(Some),
    }
}

/// The edge's TLS: the configured certificate, or one generated for every region of the
/// clusters known at start (file and store) and the admin API's default region.
fn tls_config(config: &Config, plane: &SharedPlane) -> Result<Arc<rustls::ServerConfig>, String> {
    let (cert, key) = match (&config.edge.tls_cert, &config.edge.tls_key) {
        (Some(c), Some(k)) => (c.clone(), k.clone()),
        _ => {
            let snap = lock(plane).snapshot();
            let mut regions: Vec<String> = snap.catalog.live().map(|c| c.region.clone()).collect();
            regions.extend(config.admin.as_ref().map(|a| a.default_region.clone()));
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

fn print_banner(
    config: &Config,
    plane: &SharedPlane,
    driver: Driver,
    threads: usize,
    (http, https): (Option<SocketAddr>, Option<SocketAddr>),
    embedded: bool,
    engine: Option<SocketAddr>,
) {
    let fmt = |a: Option<SocketAddr>| a.map(|a| a.to_string()).unwrap_or_else(|| "off".into());
    let placed = if config.edge.pin_workers {
        "each pinned to a core"
    } else {
        "placed by the scheduler"
    };
    println!(
        "searchgate: driver {}, {threads} worker thread(s), {placed}",
        driver.name()
    );
    let congestion = match config.edge.upstream_congestion.as_str() {
        "" => "the host's".to_string(),
        name => match super::sock::congestion_check(name) {
            Ok(got) => got,
            Err(e) => format!("the host's ({name} refused: {e})"),
        },
    };
    println!("searchgate: upstream connections: congestion control {congestion}");
    println!(
        "searchgate: listening http={} https={}",
        fmt(http),
        fmt(https)
    );
    if let Some(e) = engine {
        println!("searchgate: embedded engine on {e}");
    }
    let (scheme, port) = match (https, http) {
        (Some(a), _) => ("https", a.port()),
        (None, Some(a)) => ("http", a.port()),
        (None, None) => return,
    };
    let ca = config.edge.data_dir.join(certs::CA_CERT);
    let snap = lock(plane).snapshot();
    for c in snap.catalog.live() {
        // Only the embedded default's own demo password is shown (from its file, and only
        // while it is still the cluster's password); no other password is ever known.
        let pass = config
            .clusters
            .iter()
            .find(|f| f.id == c.id && embedded)
            .map(|f| f.password.expose())
            .filter(|p| c.password.verify(p.as_bytes()))
            .unwrap_or("<password>");
        println!(
            "searchgate: cluster {} ({}, plan {}, mode {}, {})",
            c.id,
            c.class.as_str(),
            c.plan,
            c.mode.as_str(),
            c.state()
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
        if embedded && scheme == "https" && pass != "<password>" {
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

/// Waits for signals and config changes until shutdown; then sets `draining`. Ends
/// maintenance windows whose time came.
fn control_loop(
    mut signals: Signals,
    path: &Path,
    first: &Config,
    plane: &SharedPlane,
    shared: &Shared,
    workers: &mut Crew,
    room: Option<(SocketAddr, u64)>,
) -> Result<(), String> {
    let mut seen = modified(path);
    let mut current = first.clone();
    let mut room_seen = None;
    loop {
        if let Some(engine) = room {
            warn_engine_room(plane, engine, &mut room_seen);
        }
        for sig in signals.pending() {
            match sig {
                SIGHUP => reload(path, &mut current, plane, "SIGHUP"),
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
            reload(path, &mut current, plane, "file change");
        }
        refresh_addresses(plane);
        match lock(plane).expire_maintenance() {
            Ok(0) => {}
            Ok(n) => println!("searchgate: {n} maintenance window(s) ended"),
            Err(e) => eprintln!("searchgate: ending maintenance windows: {e}"),
        }
        if workers.supervise() == 0 && workers.all_stopped() {
            return Err("every worker stopped".into());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Warns when the multitenant clusters on the embedded engine (`engine`: its address and
/// `max_connections`) may keep more connections busy than it serves
/// (`policy::engine_room`); looked at once per new snapshot (start, reloads, admin
/// changes), said once per change of the figures.
fn warn_engine_room(
    plane: &SharedPlane,
    (addr, max_connections): (SocketAddr, u64),
    seen: &mut Option<(u64, Option<engine_room::Overcommit>)>,
) {
    let snap = lock(plane).snapshot();
    if seen.as_ref().is_some_and(|(g, _)| *g == snap.generation) {
        return;
    }
    let bounds: Vec<u64> = snap
        .clusters()
        .filter(|c| c.prefix.is_some() && c.upstreams.contains(&addr))
        .map(|c| engine_room::in_flight_bound(c.plan.concurrency, &c.plan.split))
        .collect();
    let now = engine_room::check(&bounds, max_connections).err();
    let before = seen.take().and_then(|(_, o)| o);
    match now {
        Some(o) if before != Some(o) => eprintln!("{}", o.warning()),
        None if before.is_some() => println!(
            "searchgate: the multitenant clusters on the embedded engine fit its [engine] max_connections = {max_connections} again"
        ),
        _ => {}
    }
    *seen = Some((snap.generation, now));
}

/// Publishes the snapshot again when upstream names resolve to other addresses (the
/// checker thread looked them up).
fn refresh_addresses(plane: &SharedPlane) {
    let mut p = lock(plane);
    if p.resolver().take_changed() {
        if let Err(e) = p.refresh() {
            eprintln!("searchgate: upstream addresses changed but cannot be served: {e}");
        }
    }
}

/// Applies the file again: its settings stay as at start (listeners, `[engine]`,
/// `[admin]`), its plans and clusters go through the control plane's commands.
fn reload(path: &Path, current: &mut Config, plane: &SharedPlane, why: &str) {
    match Config::load(path) {
        Err(e) => eprintln!("searchgate: reload ({why}) refused, keeping the running config: {e}"),
        Ok(mut next) => {
            next.engine = current.engine.clone(); // the engine's address is fixed while running
            next.admin = current.admin.clone();
            if next.edge.https != current.edge.https || next.edge.http != current.edge.http {
                eprintln!("searchgate: listener changes take effect at the next restart");
            }
            match boot::apply_file(plane, &next) {
                Ok((gen, live)) => {
                    println!("searchgate: reloaded ({why}): {live} cluster(s), generation {gen}");
                    *current = next;
                }
                Err(e) => {
                    eprintln!("searchgate: reload ({why}) refused, keeping the running config: {e}")
                }
            }
        }
    }
}
