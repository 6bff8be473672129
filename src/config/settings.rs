//! The settings of this process: `[edge]` (listeners, TLS, limits and timeouts of the proxy),
//! `[engine]` (the embedded engine), `[admin]` (the admin API) and `[debug]` (test-only
//! fault injection), with their defaults.
//!
//! Must not touch: the declarative seed (`seed`), the other tables, sockets.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::{valid_label, ByteSize, Dur, Secret};

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

fn default_admin_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9900))
}

fn default_region() -> String {
    "local".into()
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

impl EdgeConfig {
    /// `[edge]` on its own: a domain, a listener, TLS files in pairs, limits and intervals
    /// in range, a congestion control name the kernel could know.
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.domain.is_empty() || self.domain.starts_with('.') || self.domain.ends_with('.') {
            return Err(format!(
                "edge.domain: `{}` is not a domain name",
                self.domain
            ));
        }
        if self.https.is_none() && self.http.is_none() {
            return Err("edge: set `https` or `http` (or both): there is no listener".into());
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err("edge: `tls_cert` and `tls_key` go together".into());
        }
        if self.disable_factor < 1 {
            return Err("edge.disable_factor: must be at least 1".into());
        }
        for p in &self.trusted_proxies {
            crate::cidr::Cidr::parse(p).map_err(|why| format!("edge.trusted_proxies: {why}"))?;
        }
        if self.metering_interval.0 < Duration::from_millis(100) {
            return Err("edge.metering_interval: must be at least 100ms".into());
        }
        let cc = &self.upstream_congestion;
        if cc.len() > 15 || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!(
                "edge.upstream_congestion: `{cc}` is not a congestion control name"
            ));
        }
        if self.max_body.0 == 0 || self.max_head.0 < 1024 {
            return Err("edge: `max_body` must be > 0 and `max_head` at least 1kb".into());
        }
        Ok(())
    }
}

impl AdminConfig {
    /// `[admin]` against the edge's listeners and the pools' names (`pool_names`).
    pub(super) fn validate(
        &self,
        edge: &EdgeConfig,
        pool_names: &HashSet<&str>,
    ) -> Result<(), String> {
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err("admin: `tls_cert` and `tls_key` go together".into());
        }
        let taken = [edge.http, edge.https].into_iter().flatten();
        if self.listen.port() != 0 && taken.into_iter().any(|l| l == self.listen) {
            return Err("admin.listen: must not be a customer listener".into());
        }
        if !valid_label(&self.default_region) {
            return Err("admin.default_region: must be one DNS label".into());
        }
        let named = |u: &&String| u.contains(':') || pool_names.contains(u.as_str());
        if let Some(bad) = self.shared_upstreams.iter().find(|u| !named(u)) {
            return Err(format!(
                "admin.shared_upstreams: `{bad}` is neither host:port nor an [[upstream_pools]] name"
            ));
        }
        if let Some(t) = &self.test_clock {
            crate::calendar::parse_rfc3339_millis(t).map_err(|_| {
                format!(
                    "admin.test_clock: `{t}` is not a time (RFC 3339, e.g. 2030-03-01T00:00:00Z)"
                )
            })?;
        }
        if let Some(t) = &self.token {
            if t.expose().len() < 16 {
                return Err("admin.token: at least 16 characters".into());
            }
        }
        Ok(())
    }
}
