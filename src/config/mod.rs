//! The configuration file (TOML) and its validation.
//!
//! Owns: the file format (`[edge]`, `[engine]`, `[admin]`, `[billing]`, `[[plans]]`,
//! `[[clusters]]`),
//! unknown keys
//! refused with a message naming the key, units, defaults, cross-checks (plans exist, ids,
//! host names and usernames unique), and the [`Secret`] type that keeps passwords out of
//! logs and `Debug` output. Also writes the embedded default config (see [`embedded`]).
//! `[[plans]]` and `[[clusters]]` are a declarative seed: the control plane applies them
//! through its command path (see `control::seed`); `[edge]`, `[engine]` and `[admin]` are
//! settings of this process.
//!
//! Must not touch: sockets, runtime state. Loading is a pure function of the file's text.

mod billing;
pub mod embedded;
mod fleet;
mod health;
mod pools;
mod units;

use std::collections::HashSet;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use billing::BillingConfig;
pub use fleet::{FleetConfig, StoreConfig};
pub use health::{HealthConfig, HealthSettings};
pub use pools::{pool_named, valid_pool_name, PoolConfig, PoolSpec};
pub use units::{parse_duration, parse_size, ByteSize, Dur};

/// A secret string (a cluster password): never shown by `Debug` or `Display`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The secret itself; call only where it is compared or written to its file.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Cluster class (spec 1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
pub enum ClusterClass {
    #[serde(rename = "multitenant")]
    Multitenant,
    #[serde(rename = "single-tenant")]
    SingleTenant,
}

/// Cluster mode (spec 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
pub enum Mode {
    #[serde(rename = "normal")]
    Normal,
    #[serde(rename = "read-only")]
    ReadOnly,
    #[serde(rename = "disabled")]
    Disabled,
    #[serde(rename = "maintenance")]
    Maintenance,
    /// Not provisioned yet.
    #[serde(rename = "provisioning")]
    Provisioning,
    #[serde(rename = "destroyed")]
    Destroyed,
}

impl ClusterClass {
    /// The name used in files and the admin API.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterClass::Multitenant => "multitenant",
            ClusterClass::SingleTenant => "single-tenant",
        }
    }

    /// The class named `s` (as in files and the admin API).
    pub fn parse(s: &str) -> Option<Self> {
        [ClusterClass::Multitenant, ClusterClass::SingleTenant]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

impl Mode {
    /// Every mode, in the order of spec 3.
    pub const ALL: [Mode; 6] = [
        Mode::Normal,
        Mode::ReadOnly,
        Mode::Disabled,
        Mode::Maintenance,
        Mode::Provisioning,
        Mode::Destroyed,
    ];

    /// The name used in files and the admin API.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Normal => "normal",
            Mode::ReadOnly => "read-only",
            Mode::Disabled => "disabled",
            Mode::Maintenance => "maintenance",
            Mode::Provisioning => "provisioning",
            Mode::Destroyed => "destroyed",
        }
    }

    /// The mode named `s`.
    pub fn parse(s: &str) -> Option<Self> {
        Mode::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub edge: EdgeConfig,
    pub engine: Option<EngineConfig>,
    /// The admin API (absent: no admin listener, unless this is the embedded default).
    pub admin: Option<AdminConfig>,
    #[serde(default)]
    pub plans: Vec<PlanConfig>,
    #[serde(default)]
    pub clusters: Vec<ClusterConfig>,
    /// Usage history, overage notices (absent: the defaults).
    #[serde(default)]
    pub billing: BillingConfig,
    /// Fault injection for tests (absent: none; see [`DebugConfig`]).
    #[serde(default)]
    pub debug: DebugConfig,
    /// The control plane's store (absent: SQLite in `data_dir`).
    #[serde(default)]
    pub store: StoreConfig,
    /// This node in a fleet sharing a PostgreSQL store.
    #[serde(default)]
    pub fleet: FleetConfig,
    /// Active checks and ejection of upstream nodes (absent: the defaults).
    #[serde(default)]
    pub upstream_health: HealthConfig,
    /// Named pools of upstream nodes, each with its own checks (absent: none).
    #[serde(default)]
    pub upstream_pools: Vec<PoolConfig>,
}

/// The environment variable that must be `1` for a `[debug]` table that turns a hook on
/// to be accepted at start (a copied test config alone cannot turn one on).
pub const DEBUG_HOOKS_ENV: &str = "SEARCHGATE_DEBUG_HOOKS";

/// `[debug]`: test-only fault injection, off by default. With `panic_hooks = true` (and
/// [`DEBUG_HOOKS_ENV`]`=1` in the environment), a request carrying the header
/// `x-searchgate-debug-panic: <point>` makes the edge, the admin API or the embedded engine
/// panic at that point (see `edge::faults`), so the tests can prove a panic is contained.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DebugConfig {
    #[serde(default)]
    pub panic_hooks: bool,
}

impl DebugConfig {
    /// Whether the hooks may run: asked for in the file, and allowed by the environment
    /// (`allowed`: the value of [`DEBUG_HOOKS_ENV`]). `Err` when asked for but not allowed.
    pub fn hooks_enabled(&self, allowed: Option<&str>) -> Result<bool, String> {
        match (self.panic_hooks, allowed) {
            (false, _) => Ok(false),
            (true, Some("1")) => Ok(true),
            (true, _) => Err(format!(
                "debug.panic_hooks: refused: fault injection is for tests only and needs \
                 {DEBUG_HOOKS_ENV}=1 in the environment as well"
            )),
        }
    }
}

/// `[edge]`: listeners, TLS, limits and timeouts of the proxy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeConfig {
    /// Clusters answer at `<hostname>.<region>.<domain>`.
    pub domain: String,
    /// HTTPS listener.
    pub https: Option<SocketAddr>,
    /// Plain HTTP listener (TLS offloaded elsewhere, load tests).
    pub http: Option<SocketAddr>,
    /// Metrics listener, unauthenticated (`GET /metrics`, Prometheus text): loopback or an
    /// operator network only. Absent: none.
    pub metrics: Option<SocketAddr>,
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// PEM certificate chain; absent: a CA and wildcard certificate are generated.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// Route requests whose Host is `localhost` or an IP literal by their username.
    #[serde(default)]
    pub route_by_username: bool,
    /// Request body limit (spec 8: 40MB).
    #[serde(default = "default_max_body")]
    pub max_body: ByteSize,
    /// Request head limit, Authorization not counted (spec 8: 16KB).
    #[serde(default = "default_max_head")]
    pub max_head: ByteSize,
    /// Whole-request deadline, queue included (spec 8: 60s).
    #[serde(default = "default_deadline")]
    pub deadline: Dur,
    /// Time allowed to receive a request head once its first byte arrived (408).
    #[serde(default = "default_head_timeout")]
    pub head_timeout: Dur,
    /// Longest pause while receiving a request body (408).
    #[serde(default = "default_body_timeout")]
    pub body_timeout: Dur,
    /// Idle keep-alive connections are closed after this.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: Dur,
    /// Upstream connect timeout (503).
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout: Dur,
    /// Pooled upstream connections idle longer than this are not reused.
    #[serde(default = "default_upstream_idle")]
    pub upstream_idle: Dur,
    /// On SIGTERM/SIGINT, in-flight requests get this long to finish.
    #[serde(default = "default_shutdown_grace")]
    pub shutdown_grace: Dur,
    /// Access log: a file path, `"-"` for stderr, or `"off"`. Default: `<data_dir>/access.log`.
    pub access_log: Option<String>,
    /// Proxies (CIDR ranges) whose `X-Forwarded-For` names the client address that keys'
    /// `allowed_ips` are checked against; from anyone else the socket's address counts.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// After a credential rotation, the old pair keeps working this long (default: not at all).
    #[serde(default = "default_credential_grace")]
    pub credential_grace: Dur,
    /// How often each cluster's disk, shards and documents are read from its upstream.
    #[serde(default = "default_metering_interval")]
    pub metering_interval: Dur,
    /// Disk above this many times the plan's disables a cluster (above the plan: read-only).
    #[serde(default = "default_disable_factor")]
    pub disable_factor: u64,
    /// Write each cluster's latency, minute by minute, to `<data_dir>/latency/<cluster>.hlog`
    /// (HdrHistogram interval logs). Off by default.
    #[serde(default)]
    pub latency_log: bool,
    /// Record per-request metrics (Prometheus, latency histograms, interval logs). Default
    /// true; `false` exists to measure what recording costs (`loadtest/run.sh`, scenario
    /// `metrics`): `/metrics` and the latency views then stay empty.
    #[serde(default = "default_true")]
    pub record_metrics: bool,
    /// Pin each worker thread to its own core (default true: thread per core). `false`
    /// lets the kernel's scheduler place the workers, for hosts where the edge shares its
    /// cores with other busy processes (the load test's two-worker scenario, `plain_2w`).
    #[serde(default = "default_true")]
    pub pin_workers: bool,
    /// TCP congestion control of the edge's upstream connections (default `cubic`; empty:
    /// the host's). BBR paces every send with a timer, which on a loopback or LAN leg costs
    /// CPU for nothing (tuning/README.md, "Congestion control of upstream connections").
    #[serde(default = "default_upstream_congestion")]
    pub upstream_congestion: String,
}

/// `[engine]`: run the embedded engine as a child process.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// Open search contexts the engine allows at once, counted per shard searched (its
    /// `search.max_open_scroll_context`; Elasticsearch's default, 500). The multitenant
    /// clusters on the engine share them out (see `tenancy::context_shares`).
    #[serde(default = "default_engine_open_contexts")]
    pub max_open_contexts: u64,
    /// Connections the engine serves at once (one thread each); at the limit a new one
    /// takes the place of the one idle the longest, so only connections doing work count.
    #[serde(default = "default_engine_connections")]
    pub max_connections: u64,
    /// Memory one request may take in the engine, in MB (its request circuit breaker:
    /// beyond, 429 `circuit_breaking_exception`; docs/engine.md, "Memory").
    #[serde(default = "default_breaker_request_mb")]
    pub breaker_request_mb: u64,
    /// Memory all requests in flight in the engine may take together, in MB (its parent
    /// circuit breaker).
    #[serde(default = "default_breaker_total_mb")]
    pub breaker_total_mb: u64,
}

/// `[admin]`: the control plane's admin API listener and where new clusters go.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// Its own listener, never a customer one (default 127.0.0.1:9900).
    #[serde(default = "default_admin_listen")]
    pub listen: SocketAddr,
    /// The bearer token; absent: generated on first start into `<data_dir>/admin.token`.
    pub token: Option<Secret>,
    /// Serve the admin API over TLS (the edge's certificate, or `tls_cert`/`tls_key`).
    #[serde(default)]
    pub tls: bool,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Shared upstreams multitenant clusters are placed on (the least loaded one): a
    /// `host:port` or a pool's name each; the embedded engine, when there is one, is
    /// always among them.
    #[serde(default)]
    pub shared_upstreams: Vec<String>,
    /// Region of clusters created without one.
    #[serde(default = "default_region")]
    pub default_region: String,
    /// Tests only: the control plane's clock starts at this instant (RFC 3339) and moves
    /// only through `POST /v1/test/clock`. Absent: the system clock (and no such endpoint).
    pub test_clock: Option<String>,
}

impl Default for AdminConfig {
    fn default() -> Self {
        AdminConfig {
            listen: default_admin_listen(),
            token: None,
            tls: false,
            tls_cert: None,
            tls_key: None,
            shared_upstreams: Vec::new(),
            default_region: default_region(),
            test_clock: None,
        }
    }
}

/// `[[plans]]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlanConfig {
    pub name: String,
    /// Requests in flight at the upstream at once, across all cores.
    pub concurrency: u32,
    /// Requests that may wait for a slot; beyond: immediate 429.
    pub queue_size: u32,
    /// Longest wait for a slot (429).
    pub queue_timeout: Dur,
    pub shards: u64,
    pub disk: ByteSize,
    pub memory: ByteSize,
    /// More actions in one `_bulk`: 413.
    pub max_bulk_actions: u64,
    /// Monthly price in integer cents (invoices are prorated from it).
    #[serde(default)]
    pub monthly_price_cents: u64,
    /// Open scroll and point-in-time contexts allowed at once, counted as the upstream
    /// counts them: one per shard searched (a scroll over a 5-shard index is 5). On a
    /// shared upstream whose limit the plans together exceed, each cluster gets its part.
    #[serde(default = "default_max_open_contexts")]
    pub max_open_contexts: u64,
    /// Over the plan this long after the notice: read-only (the overage ladder).
    #[serde(default = "default_overage_grace")]
    pub overage_grace: Dur,
    /// Read-only this long, still over: disabled.
    #[serde(default = "default_overage_disable_after")]
    pub overage_disable_after: Dur,
    /// Disk above this many times the plan's: disabled at once (absent: `[edge]
    /// disable_factor`, whose default is 2).
    pub overage_extreme_factor: Option<u64>,
    /// Searches' own allowance and queue (absent: searches share `concurrency`).
    #[serde(default)]
    pub search_concurrency: Option<u32>,
    #[serde(default)]
    pub search_queue_size: Option<u32>,
    /// Writes' own allowance and queue (absent: writes share `concurrency`).
    #[serde(default)]
    pub write_concurrency: Option<u32>,
    #[serde(default)]
    pub write_queue_size: Option<u32>,
}

impl PlanConfig {
    /// The plan's search and write lanes are whole: each concurrency comes with its queue
    /// size and is at least 1 (the registry checks stored plans the same way, with
    /// `policy::admit::lanes::split_of`).
    fn check_lanes(&self) -> Result<(), String> {
        let lanes = [
            ("search", self.search_concurrency, self.search_queue_size),
            ("write", self.write_concurrency, self.write_queue_size),
        ];
        for (kind, concurrency, queue) in lanes {
            match (concurrency, queue) {
                (Some(0), _) => return Err(format!("{kind}_concurrency: must be at least 1")),
                (Some(_), None) => {
                    return Err(format!(
                        "{kind}_queue_size: required with {kind}_concurrency"
                    ))
                }
                (None, Some(_)) => {
                    return Err(format!(
                        "{kind}_concurrency: required with {kind}_queue_size"
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// `[[clusters]]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    pub id: String,
    pub hostname: String,
    pub region: String,
    pub class: ClusterClass,
    pub plan: String,
    pub username: String,
    pub password: Secret,
    #[serde(default = "default_mode")]
    pub mode: Mode,
    /// Upstream nodes (`host:port`), or an `[[upstream_pools]]` name; absent: the
    /// embedded engine.
    #[serde(default, deserialize_with = "pools::upstream_field")]
    pub upstream: Option<Vec<String>>,
}

/// A configuration error, with the file and the key it is about.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ConfigError {
    pub origin: String,
    pub message: String,
}

fn default_true() -> bool {
    true
}

fn default_upstream_congestion() -> String {
    "cubic".into()
}

fn default_data_dir() -> PathBuf {
    PathBuf::from("./data")
}
fn default_max_body() -> ByteSize {
    ByteSize(40 << 20)
}
fn default_max_head() -> ByteSize {
    ByteSize(16 << 10)
}
fn default_deadline() -> Dur {
    Dur(Duration::from_secs(60))
}
fn default_head_timeout() -> Dur {
    Dur(Duration::from_secs(10))
}
fn default_body_timeout() -> Dur {
    Dur(Duration::from_secs(30))
}
fn default_idle_timeout() -> Dur {
    Dur(Duration::from_secs(75))
}
fn default_connect_timeout() -> Dur {
    Dur(Duration::from_secs(5))
}
fn default_upstream_idle() -> Dur {
    Dur(Duration::from_secs(30))
}
fn default_shutdown_grace() -> Dur {
    Dur(Duration::from_secs(20))
}
fn default_credential_grace() -> Dur {
    Dur(Duration::ZERO)
}
fn default_metering_interval() -> Dur {
    Dur(Duration::from_secs(5))
}
fn default_disable_factor() -> u64 {
    2
}
fn default_overage_grace() -> Dur {
    Dur(Duration::from_secs(10 * 86_400))
}
fn default_overage_disable_after() -> Dur {
    Dur(Duration::from_secs(15 * 86_400))
}
fn default_admin_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9900))
}
fn default_region() -> String {
    "local".into()
}
fn default_max_open_contexts() -> u64 {
    500
}
fn default_engine_open_contexts() -> u64 {
    500
}
fn default_engine_connections() -> u64 {
    4096
}
fn default_breaker_request_mb() -> u64 {
    100
}
fn default_breaker_total_mb() -> u64 {
    1024
}
fn default_mode() -> Mode {
    Mode::Normal
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            message: format!("cannot read: {e}"),
        })?;
        Config::parse(&text, &origin)
    }

    /// Parses and validates config text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let err = |message: String| ConfigError {
            origin: origin.to_string(),
            message,
        };
        let mut config: Config = toml::from_str(text).map_err(|e| err(e.to_string()))?;
        config.validate().map_err(err)?;
        for p in &mut config.plans {
            p.overage_extreme_factor
                .get_or_insert(config.edge.disable_factor);
        }
        Ok(config)
    }

    /// The access log destination: `None` when off.
    pub fn access_log_target(&self) -> Option<String> {
        match self.edge.access_log.as_deref() {
            Some("off") => None,
            Some(other) => Some(other.to_string()),
            None => Some(self.edge.data_dir.join("access.log").display().to_string()),
        }
    }

    /// The `[[upstream_pools]]`, checked, their settings over `[upstream_health]`.
    pub fn pools(&self) -> Result<Vec<PoolSpec>, String> {
        pools::pool_specs(&self.upstream_pools, &self.upstream_health)
    }

    fn validate(&self) -> Result<(), String> {
        self.upstream_health.settings()?;
        let pools = self.pools()?;
        let pool_names: HashSet<&str> = pools.iter().map(|p| p.name.as_str()).collect();
        let e = &self.edge;
        if e.domain.is_empty() || e.domain.starts_with('.') || e.domain.ends_with('.') {
            return Err(format!("edge.domain: `{}` is not a domain name", e.domain));
        }
        if e.https.is_none() && e.http.is_none() {
            return Err("edge: set `https` or `http` (or both): there is no listener".into());
        }
        if e.tls_cert.is_some() != e.tls_key.is_some() {
            return Err("edge: `tls_cert` and `tls_key` go together".into());
        }
        if e.disable_factor < 1 {
            return Err("edge.disable_factor: must be at least 1".into());
        }
        for p in &e.trusted_proxies {
            crate::cidr::Cidr::parse(p).map_err(|why| format!("edge.trusted_proxies: {why}"))?;
        }
        if e.metering_interval.0 < Duration::from_millis(100) {
            return Err("edge.metering_interval: must be at least 100ms".into());
        }
        let cc = &e.upstream_congestion;
        if cc.len() > 15 || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!(
                "edge.upstream_congestion: `{cc}` is not a congestion control name"
            ));
        }
        if e.max_body.0 == 0 || e.max_head.0 < 1024 {
            return Err("edge: `max_body` must be > 0 and `max_head` at least 1kb".into());
        }
        if let Some(a) = &self.admin {
            if a.tls_cert.is_some() != a.tls_key.is_some() {
                return Err("admin: `tls_cert` and `tls_key` go together".into());
            }
            let taken = [e.http, e.https].into_iter().flatten();
            if a.listen.port() != 0 && taken.into_iter().any(|l| l == a.listen) {
                return Err("admin.listen: must not be a customer listener".into());
            }
            if !valid_label(&a.default_region) {
                return Err("admin.default_region: must be one DNS label".into());
            }
            let named = |u: &&String| u.contains(':') || pool_names.contains(u.as_str());
            if let Some(bad) = a.shared_upstreams.iter().find(|u| !named(u)) {
                return Err(format!(
                    "admin.shared_upstreams: `{bad}` is neither host:port nor an [[upstream_pools]] name"
                ));
            }
            if let Some(t) = &a.test_clock {
                crate::calendar::parse_rfc3339_millis(t).map_err(|_| {
                    format!("admin.test_clock: `{t}` is not a time (RFC 3339, e.g. 2030-03-01T00:00:00Z)")
                })?;
            }
            if let Some(t) = &a.token {
                if t.expose().len() < 16 {
                    return Err("admin.token: at least 16 characters".into());
                }
            }
        }
        self.billing.validate()?;
        self.store.validate()?;
        self.fleet.validate()?;
        if self.fleet.peer_listen.is_some() && self.store.url.is_none() {
            return Err(
                "fleet.peer_listen: a fleet needs a shared store ([store] url = \"postgres://...\")"
                    .into(),
            );
        }
        self.validate_plans()?;
        self.validate_clusters(&pool_names)
    }

    fn validate_plans(&self) -> Result<(), String> {
        let mut names = HashSet::new();
        for (i, p) in self.plans.iter().enumerate() {
            if !names.insert(p.name.as_str()) {
                return Err(format!(
                    "plans[{i}].name: plan `{}` is defined twice",
                    p.name
                ));
            }
            if p.concurrency == 0 {
                return Err(format!("plans[{i}].concurrency: must be at least 1"));
            }
            if p.overage_extreme_factor == Some(0) {
                return Err(format!(
                    "plans[{i}].overage_extreme_factor: must be at least 1"
                ));
            }
            p.check_lanes().map_err(|e| format!("plans[{i}].{e}"))?;
        }
        Ok(())
    }

    fn validate_clusters(&self, pools: &HashSet<&str>) -> Result<(), String> {
        let plans: HashSet<&str> = self.plans.iter().map(|p| p.name.as_str()).collect();
        let (mut ids, mut hosts, mut users) = (HashSet::new(), HashSet::new(), HashSet::new());
        for (i, c) in self.clusters.iter().enumerate() {
            let at = |key: &str| format!("clusters[{i}].{key}");
            if !valid_label(&c.id) {
                return Err(format!(
                    "{}: `{}` must be 1-63 of a-z, 0-9, `-`",
                    at("id"),
                    c.id
                ));
            }
            for (key, value) in [("hostname", &c.hostname), ("region", &c.region)] {
                if !valid_label(value) {
                    return Err(format!(
                        "{}: `{value}` must be one DNS label (1-63 of a-z, 0-9, `-`)",
                        at(key)
                    ));
                }
            }
            if !plans.contains(c.plan.as_str()) {
                return Err(format!("{}: no plan named `{}`", at("plan"), c.plan));
            }
            if !ids.insert(c.id.as_str()) {
                return Err(format!("{}: cluster `{}` is defined twice", at("id"), c.id));
            }
            if !hosts.insert((c.hostname.as_str(), c.region.as_str())) {
                return Err(format!(
                    "{}: `{}.{}` is used twice",
                    at("hostname"),
                    c.hostname,
                    c.region
                ));
            }
            if !valid_credential(&c.username) || !valid_credential(c.password.expose()) {
                return Err(format!(
                    "{}: username and password must be 1-128 alphanumeric characters",
                    at("username")
                ));
            }
            if !users.insert(c.username.as_str()) {
                return Err(format!(
                    "{}: username `{}` is used twice",
                    at("username"),
                    c.username
                ));
            }
            self.validate_upstream(c, pools, &at)?;
        }
        Ok(())
    }

    fn validate_upstream(
        &self,
        c: &ClusterConfig,
        pools: &HashSet<&str>,
        at: &dyn Fn(&str) -> String,
    ) -> Result<(), String> {
        if let Some(p) = c.upstream.as_deref().and_then(pool_named) {
            if !pools.contains(p) {
                return Err(format!(
                    "{}: no [[upstream_pools]] named `{p}`",
                    at("upstream")
                ));
            }
            return Ok(());
        }
        match &c.upstream {
            None if self.engine.is_none() => Err(format!(
                "{}: no upstream given and no [engine] section to default to",
                at("upstream")
            )),
            Some(list) if list.is_empty() => Err(format!("{}: empty list", at("upstream"))),
            Some(list) => {
                for u in list {
                    if !u.contains(':') {
                        return Err(format!("{}: `{u}` must be host:port", at("upstream")));
                    }
                }
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// One DNS label: 1-63 of a-z, 0-9 and `-`, not starting or ending with `-`.
pub fn valid_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && !s.starts_with('-')
        && !s.ends_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A username or password: 1-128 ASCII letters and digits.
pub fn valid_credential(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests;
