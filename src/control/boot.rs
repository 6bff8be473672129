//! Wiring the control plane into a process: open the store (SQLite in the data directory,
//! or the fleet's PostgreSQL) and the plane, apply the file's seed (at start and on every
//! reload), and start the admin listener. Used by
//! `edge::start`; every message is one line for the operator.
//!
//! Must not touch: the request path, the edge's runtime.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rustls::ServerConfig;

use super::api::observe::Observe;
use super::api::{server, Api, ApiEnv};
use super::clock::Clock;
use super::lastknown::{self, LastKnown};
use super::lease::Lease;
use super::pg::PgStore;
use super::plane::{lock, Change, Plane, SharedPlane};
use super::seed;
use super::sqlite::{SqliteStore, DB_FILE};
use super::store::{Store, StoreError};
use super::token::{AdminToken, TOKEN_FILE};
use crate::config::{AdminConfig, Config};
use crate::registry::Settings;
use crate::tenancy::TenancyKey;

/// File in the data directory naming the admin listener's URL (the CLI reads it).
pub const URL_FILE: &str = "admin.url";

/// Opens the store `config` names: `[store] url` (PostgreSQL, shared by a fleet) or
/// `<data_dir>/control.db` (SQLite).
pub fn open_store(config: &Config) -> Result<Box<dyn Store>, String> {
    match &config.store.url {
        Some(url) => {
            let store = PgStore::open(url.expose())
                .map_err(|e| format!("the PostgreSQL store ([store] url): {e}"))?;
            Ok(Box::new(store))
        }
        None => {
            let path = config.edge.data_dir.join(DB_FILE);
            let store = SqliteStore::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            Ok(Box::new(store))
        }
    }
}

/// Opens the plane over `store`, then applies `config`'s seed. With a shared store, the
/// node takes part in the fleet's leader election as `[fleet] node_id`.
pub fn open(
    config: &Config,
    key: &TenancyKey,
    store: Box<dyn Store>,
) -> Result<SharedPlane, String> {
    let clock = match config.admin.as_ref().and_then(|a| a.test_clock.as_deref()) {
        Some(t) => {
            let at = crate::calendar::parse_rfc3339_millis(t)
                .map_err(|e| format!("admin.test_clock: `{t}`: {e}"))?;
            println!("searchgate: TEST CLOCK: the control plane's time is {t} and moves only through POST /v1/test/clock");
            Clock::manual(at)
        }
        None => Clock::system(),
    };
    let settings = Settings::from_config(config, key);
    if config.store.url.is_none() {
        let mut plane = Plane::open_with(store, settings, clock)?;
        plane.queue_notices(config.billing.webhook.is_some());
        let plane = Arc::new(Mutex::new(plane));
        apply_file(&plane, config)
            .map_err(|e| format!("the configuration's clusters and plans: {e}"))?;
        return Ok(plane);
    }
    let node = config.fleet.node_id();
    let (mut plane, online) = match fleet_start(store, &config.edge.data_dir)? {
        Start::Store(store) => (Plane::open_with(store, settings, clock)?, true),
        Start::LastKnown(store, known) => {
            let declared = serde_json::from_value(known.declared.clone()).unwrap_or_default();
            eprintln!(
                "searchgate: fleet: the store is unreachable; node {node} starts from its last known catalog (change {}, in {}); admin writes answer 503 until the store is back",
                known.seq,
                config.edge.data_dir.join(lastknown::COPY_FILE).display()
            );
            let known = *known;
            let at = (known.catalog, known.seq, declared);
            (Plane::open_at(store, settings, clock, at)?, false)
        }
    };
    plane.queue_notices(config.billing.webhook.is_some());
    plane.keep_last_known(LastKnown::new(&config.edge.data_dir));
    println!(
        "searchgate: fleet: node {node} on the shared PostgreSQL store, at change {}",
        plane.seq()
    );
    plane.set_lease(Lease::new(node, config.fleet.lease.0));
    let plane = Arc::new(Mutex::new(plane));
    if online {
        apply_file(&plane, config)
            .map_err(|e| format!("the configuration's clusters and plans: {e}"))?;
    } else {
        eprintln!("searchgate: fleet: the file's clusters and plans are applied at the next reload (SIGHUP) once the store is back");
    }
    Ok(plane)
}

/// Where a fleet node's catalog comes from at start.
enum Start {
    /// The store answers.
    Store(Box<dyn Store>),
    /// The store is unreachable: this node's last known catalog.
    LastKnown(Box<dyn Store>, Box<lastknown::Known>),
}

/// Asks the store first; when it cannot be reached (and only then), the last known
/// catalog in `data_dir`. A node that never kept one cannot start without the store.
fn fleet_start(mut store: Box<dyn Store>, data_dir: &Path) -> Result<Start, String> {
    match store.seed() {
        Ok(_) => Ok(Start::Store(store)),
        Err(StoreError::Busy(e)) => match LastKnown::load(data_dir)? {
            Some(known) => Ok(Start::LastKnown(store, Box::new(known))),
            None => Err(format!(
                "{e}; and this node has no last known catalog in {} to start from",
                data_dir.display()
            )),
        },
        Err(e) => Err(e.to_string()),
    }
}

/// Applies the file's `[[plans]]` and `[[clusters]]` through the command path (see
/// `control::seed` for which wins when file and API disagree). Prints the seed's notes.
/// Returns the published generation and the number of live clusters.
pub fn apply_file(plane: &SharedPlane, config: &Config) -> Result<(u64, usize), String> {
    let mut p = lock(plane);
    if p.settings().domain != config.edge.domain.to_ascii_lowercase()
        || p.settings().route_by_username != config.edge.route_by_username
    {
        eprintln!(
            "searchgate: `domain` and `route_by_username` changes take effect at the next restart"
        );
    }
    // Pools and checks are checked against the file's catalog before anything changes: a
    // cluster naming a pool the file no longer has refuses the whole reload.
    let pools = config.pools()?.into_iter().map(Arc::new).collect();
    let health = Arc::new(config.upstream_health.settings()?);
    let grace = config.edge.credential_grace.0;
    let out = p.with_upstream_settings(pools, health, |p| {
        let snap = p.snapshot();
        let planned = seed::plan(config, p.declared(), &snap.catalog, p.now(), grace)?;
        for note in &planned.notes {
            println!("searchgate: file and admin API: {note}");
        }
        p.submit(Change {
            actor: "file".into(),
            cmds: planned.cmds,
            seed: Some(planned.declared),
            ..Change::default()
        })
        .map_err(|e| e.to_string())
    })?;
    Ok((out.generation, out.catalog.live().count()))
}

/// A running admin listener.
#[derive(Debug)]
pub struct Admin {
    pub url: String,
    /// Where the token is (`None`: given in the configuration file).
    pub token_file: Option<PathBuf>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Admin {
    /// Stops accepting (connections being served finish on their own).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        server::wake(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds `admin.listen` and serves the admin API there (with the edge's metrics hub for
/// `GET /metrics` and the latency reports); writes its URL to `<data_dir>/admin.url`.
pub fn start_admin(
    admin: &AdminConfig,
    data_dir: &Path,
    plane: SharedPlane,
    env: ApiEnv,
    tls: Option<Arc<ServerConfig>>,
    observe: Observe,
    debug_hooks: bool,
) -> Result<Admin, String> {
    let token = AdminToken::load_or_create(admin.token.as_ref().map(|t| t.expose()), data_dir)?;
    let listener = TcpListener::bind(admin.listen)
        .map_err(|e| format!("admin listener {}: {e}", admin.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{addr}");
    std::fs::write(data_dir.join(URL_FILE), format!("{url}\n"))
        .map_err(|e| format!("{}: {e}", data_dir.join(URL_FILE).display()))?;
    let api = Arc::new(Api {
        plane,
        token,
        env,
        observe,
    });
    let stop = Arc::new(AtomicBool::new(false));
    let thread = server::spawn(listener, api, tls, stop.clone(), debug_hooks)
        .map_err(|e| format!("admin thread: {e}"))?;
    Ok(Admin {
        url,
        token_file: admin.token.is_none().then(|| data_dir.join(TOKEN_FILE)),
        addr,
        stop,
        thread: Some(thread),
    })
}

/// Where cluster addresses point: the HTTPS listener if there is one (else HTTP), its port
/// left out when it is the scheme's default; and where new clusters go.
pub fn api_env(config: &Config, http: Option<SocketAddr>, https: Option<SocketAddr>) -> ApiEnv {
    let (scheme, addr, default_port) = match (https, http) {
        (Some(a), _) => ("https", Some(a), 443),
        (None, a) => ("http", a, 80),
    };
    let admin = config.admin.clone().unwrap_or_default();
    let mut shared: Vec<Option<String>> = Vec::new();
    if config.engine.is_some() {
        shared.push(None);
    }
    shared.extend(admin.shared_upstreams.iter().cloned().map(Some));
    ApiEnv {
        scheme: scheme.into(),
        port: addr.map(|a| a.port()).filter(|p| *p != default_port),
        domain: config.edge.domain.to_ascii_lowercase(),
        route_by_username: config.edge.route_by_username,
        default_region: admin.default_region,
        shared_upstreams: shared,
    }
}
