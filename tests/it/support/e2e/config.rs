//! The config file of a test edge, as data: its plans, its clusters (with the tenant that
//! calls each one), `[edge]` and `[admin]` keys and whole extra sections, and the TOML text
//! written for a temp dir.

use std::net::SocketAddr;
use std::path::Path;

use super::Tenant;

/// The domain every test cluster answers under: `<id>.r1.localhost`.
pub const DOMAIN: &str = "localhost";

/// A `[[plans]]` entry.
#[derive(Debug, Clone)]
pub struct PlanSpec {
    pub name: String,
    pub concurrency: u32,
    pub queue_size: u32,
    pub queue_timeout: String,
    pub shards: u64,
    pub disk: String,
    pub max_bulk_actions: u64,
    /// Open scrolls and points in time a multitenant cluster may hold (`None`: the default).
    pub max_open_contexts: Option<u64>,
    /// More keys of the plan, with TOML values (prices, the overage ladder).
    pub extra: Vec<(String, String)>,
}

impl PlanSpec {
    /// A roomy plan: 16 in flight, 64 queued for up to 5 s, 100 shards, 1gb of disk.
    pub fn new(name: &str) -> PlanSpec {
        PlanSpec {
            name: name.into(),
            concurrency: 16,
            queue_size: 64,
            queue_timeout: "5s".into(),
            shards: 100,
            disk: "1gb".into(),
            max_bulk_actions: 10_000,
            max_open_contexts: None,
            extra: Vec::new(),
        }
    }
    /// Sets another key of the plan (strings quoted by the caller).
    pub fn with(mut self, key: &str, toml_value: &str) -> PlanSpec {
        self.extra.retain(|(k, _)| k != key);
        self.extra.push((key.into(), toml_value.into()));
        self
    }
    pub fn shards(mut self, n: u64) -> PlanSpec {
        self.shards = n;
        self
    }
    pub fn disk(mut self, d: &str) -> PlanSpec {
        self.disk = d.into();
        self
    }
    pub fn contexts(mut self, n: u64) -> PlanSpec {
        self.max_open_contexts = Some(n);
        self
    }
    pub fn allowance(mut self, concurrency: u32, queue_size: u32, queue_timeout: &str) -> Self {
        self.concurrency = concurrency;
        self.queue_size = queue_size;
        self.queue_timeout = queue_timeout.into();
        self
    }

    fn toml(&self) -> String {
        let mut out = format!(
            "[[plans]]\nname = \"{}\"\nconcurrency = {}\nqueue_size = {}\nqueue_timeout = \"{}\"\n\
             shards = {}\ndisk = \"{}\"\nmemory = \"256mb\"\nmax_bulk_actions = {}\n",
            self.name,
            self.concurrency,
            self.queue_size,
            self.queue_timeout,
            self.shards,
            self.disk,
            self.max_bulk_actions
        );
        if let Some(n) = self.max_open_contexts {
            out.push_str(&format!("max_open_contexts = {n}\n"));
        }
        for (k, v) in &self.extra {
            out.push_str(&format!("{k} = {v}\n"));
        }
        out.push('\n');
        out
    }
}

/// A `[[clusters]]` entry: cluster `id` answers at `<id>.r1.localhost` to
/// `<id>user`:`<id>pass` (the password can be rotated).
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    pub id: String,
    pub multitenant: bool,
    pub plan: String,
    pub username: String,
    pub password: String,
    pub mode: String,
    /// `None`: the embedded engine.
    pub upstream: Option<SocketAddr>,
}

impl ClusterSpec {
    /// A multitenant cluster on the embedded engine.
    pub fn multitenant(id: &str, plan: &str) -> ClusterSpec {
        ClusterSpec {
            id: id.into(),
            multitenant: true,
            plan: plan.into(),
            username: format!("{}user", id.replace('-', "")),
            password: format!("{}pass", id.replace('-', "")),
            mode: "normal".into(),
            upstream: None,
        }
    }

    /// A single-tenant cluster on its own upstream.
    pub fn single(id: &str, plan: &str, upstream: SocketAddr) -> ClusterSpec {
        ClusterSpec {
            multitenant: false,
            upstream: Some(upstream),
            ..ClusterSpec::multitenant(id, plan)
        }
    }

    pub fn mode(mut self, mode: &str) -> ClusterSpec {
        self.mode = mode.into();
        self
    }

    /// The Host it answers at.
    pub fn host(&self) -> String {
        format!("{}.r1.{DOMAIN}", self.id)
    }

    /// A client of this cluster with its current credentials.
    pub fn tenant(&self) -> Tenant {
        Tenant {
            host: self.host(),
            user: self.username.clone(),
            pass: self.password.clone(),
        }
    }

    fn toml(&self) -> String {
        let class = if self.multitenant {
            "multitenant"
        } else {
            "single-tenant"
        };
        let mut out = format!(
            "[[clusters]]\nid = \"{}\"\nhostname = \"{}\"\nregion = \"r1\"\nclass = \"{class}\"\n\
             plan = \"{}\"\nusername = \"{}\"\npassword = \"{}\"\nmode = \"{}\"\n",
            self.id, self.id, self.plan, self.username, self.password, self.mode
        );
        if let Some(up) = self.upstream {
            out.push_str(&format!("upstream = [\"{up}\"]\n"));
        }
        out.push('\n');
        out
    }
}

/// The whole config file of a test edge.
#[derive(Debug, Clone)]
pub struct Config {
    /// `[edge]` keys with TOML values, overriding the defaults of [`Config::toml`].
    pub edge: Vec<(String, String)>,
    /// Run the embedded engine (`[engine]` on 127.0.0.1:0, a temp data dir).
    pub engine: bool,
    /// More `[engine]` keys with TOML values (e.g. `max_connections`).
    pub engine_extra: Vec<(String, String)>,
    /// Serve the admin API (`[admin]` on 127.0.0.1:0, the token generated in the data dir).
    pub admin: bool,
    /// More `[admin]` keys with TOML values (e.g. `test_clock`).
    pub admin_extra: Vec<(String, String)>,
    /// Whole sections appended to the file as they are (e.g. `[billing]`).
    pub sections: String,
    pub plans: Vec<PlanSpec>,
    pub clusters: Vec<ClusterSpec>,
}

impl Config {
    /// The embedded engine, plan `p` (roomy), no clusters.
    pub fn new() -> Config {
        Config {
            edge: Vec::new(),
            engine: true,
            engine_extra: Vec::new(),
            admin: false,
            admin_extra: Vec::new(),
            sections: String::new(),
            plans: vec![PlanSpec::new("p")],
            clusters: Vec::new(),
        }
    }

    /// Sets an `[edge]` key (strings quoted by the caller).
    pub fn edge(mut self, key: &str, toml_value: &str) -> Config {
        self.edge.retain(|(k, _)| k != key);
        self.edge.push((key.into(), toml_value.into()));
        self
    }

    /// Sets an `[engine]` key (strings quoted by the caller).
    pub fn engine_key(mut self, key: &str, toml_value: &str) -> Config {
        self.engine_extra.retain(|(k, _)| k != key);
        self.engine_extra.push((key.into(), toml_value.into()));
        self
    }

    /// With the admin API.
    pub fn with_admin(mut self) -> Config {
        self.admin = true;
        self
    }

    /// With the admin API and this `[admin]` key (strings quoted by the caller).
    pub fn admin_key(mut self, key: &str, toml_value: &str) -> Config {
        self.admin = true;
        self.admin_extra.retain(|(k, _)| k != key);
        self.admin_extra.push((key.into(), toml_value.into()));
        self
    }

    /// Appends a whole section (e.g. `"[billing]\nwebhook = \"...\"\n"`).
    pub fn section(mut self, text: &str) -> Config {
        self.sections.push('\n');
        self.sections.push_str(text);
        self
    }

    /// Adds or replaces a plan.
    pub fn plan(mut self, p: PlanSpec) -> Config {
        self.plans.retain(|q| q.name != p.name);
        self.plans.push(p);
        self
    }

    pub fn cluster(mut self, c: ClusterSpec) -> Config {
        self.clusters.push(c);
        self
    }

    /// The cluster `id` (panics when there is none).
    pub fn get(&self, id: &str) -> &ClusterSpec {
        self.clusters
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no cluster {id}"))
    }

    /// The cluster `id`, to change.
    pub fn get_mut(&mut self, id: &str) -> &mut ClusterSpec {
        self.clusters
            .iter_mut()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no cluster {id}"))
    }

    /// The plan `name`, to change.
    pub fn plan_mut(&mut self, name: &str) -> &mut PlanSpec {
        self.plans
            .iter_mut()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no plan {name}"))
    }

    /// The file's text for temp dir `dir`.
    pub fn toml(&self, dir: &Path) -> String {
        let mut edge: Vec<(String, String)> = [
            ("domain", format!("{DOMAIN:?}")),
            ("http", "\"127.0.0.1:0\"".into()),
            ("data_dir", format!("{:?}", dir.join("edge"))),
            ("access_log", "\"off\"".into()),
            ("deadline", "\"20s\"".into()),
            ("connect_timeout", "\"2s\"".into()),
            ("idle_timeout", "\"30s\"".into()),
            ("shutdown_grace", "\"2s\"".into()),
            ("metering_interval", "\"1h\"".into()),
            // Gauges the tests wait on (queue depth, requests in flight).
            ("metrics", "\"127.0.0.1:0\"".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        for (k, v) in &self.edge {
            edge.retain(|(key, _)| key != k);
            edge.push((k.clone(), v.clone()));
        }
        let mut out = String::from("[edge]\n");
        for (k, v) in edge {
            out.push_str(&format!("{k} = {v}\n"));
        }
        if self.engine {
            out.push_str(&format!(
                "\n[engine]\nlisten = \"127.0.0.1:0\"\ndata_dir = {:?}\n",
                dir.join("engine")
            ));
            for (k, v) in &self.engine_extra {
                out.push_str(&format!("{k} = {v}\n"));
            }
        }
        if self.admin {
            out.push_str("\n[admin]\nlisten = \"127.0.0.1:0\"\n");
            for (k, v) in &self.admin_extra {
                out.push_str(&format!("{k} = {v}\n"));
            }
        }
        out.push_str(&self.sections);
        out.push('\n');
        for p in &self.plans {
            out.push_str(&p.toml());
        }
        for c in &self.clusters {
            out.push_str(&c.toml());
        }
        out
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}
