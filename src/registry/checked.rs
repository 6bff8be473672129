//! Checking a catalog for serving: every live cluster's upstreams resolve (a pool's name
//! must be one of the settings' pools), and tenants of a shared upstream are isolated (a
//! single-tenant cluster never shares an upstream with multitenant ones, no two prefixes
//! are equal). [`compile`] checks a whole catalog; [`Checked::update`] checks again only
//! the clusters a change touched, on persistent maps shared with the previous check, so a
//! change costs what it changes, not the catalog's size. Nothing here changes anything.
//!
//! Must not touch: runtime state, the store, sockets (names are resolved through the
//! function passed in).

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use super::catalog::{Catalog, ClusterRecord};
use super::diff::Diff;
use super::{RegistryError, Settings};
use crate::config::{pool_named, ClusterClass, PoolSpec};
use crate::tenancy::Prefix;

/// A live cluster ready to be put in a snapshot: its upstreams resolved, its prefix derived.
#[derive(Debug, Clone)]
pub(super) struct Compiled {
    pub(super) record: Arc<ClusterRecord>,
    pub(super) upstreams: Vec<SocketAddr>,
    pub(super) pool: Option<Arc<str>>,
    pub(super) prefix: Option<Prefix>,
}

/// Who uses each upstream address and each prefix (the isolation checks' indexes).
#[derive(Debug, Clone, Default)]
struct Isolation {
    /// Multitenant clusters by the addresses they use.
    multi: imbl::HashMap<SocketAddr, imbl::OrdSet<String>>,
    /// Single-tenant clusters by the addresses they use.
    single: imbl::HashMap<SocketAddr, imbl::OrdSet<String>>,
    prefixes: imbl::HashMap<Prefix, String>,
}

fn add_to(map: &mut imbl::HashMap<SocketAddr, imbl::OrdSet<String>>, a: SocketAddr, id: &str) {
    map.entry(a).or_default().insert(id.to_string());
}

fn remove_from(map: &mut imbl::HashMap<SocketAddr, imbl::OrdSet<String>>, a: SocketAddr, id: &str) {
    if let Some(set) = map.get_mut(&a) {
        set.remove(id);
        if set.is_empty() {
            map.remove(&a);
        }
    }
}

impl Isolation {
    /// Adds `c`, or says why it cannot be served beside the others.
    fn add(&mut self, c: &Compiled) -> Result<(), RegistryError> {
        let id = c.record.id.as_str();
        let err = |cluster: &str, message: String| RegistryError {
            cluster: cluster.into(),
            message,
        };
        let shared = |m: &str| {
            format!("a single-tenant cluster cannot share its upstream with the multitenant cluster `{m}` (its indices would not be namespaced)")
        };
        match c.prefix {
            Some(p) => {
                if let Some(other) = self.prefixes.get(&p).filter(|o| o.as_str() != id) {
                    return Err(err(
                        id,
                        format!("its index prefix equals cluster `{other}`'s; rename one"),
                    ));
                }
                for a in &c.upstreams {
                    if let Some(s) = self.single.get(a).and_then(|s| s.get_min()) {
                        return Err(err(s, shared(id)));
                    }
                }
                self.prefixes.insert(p, id.to_string());
                for a in &c.upstreams {
                    add_to(&mut self.multi, *a, id);
                }
            }
            None => {
                for a in &c.upstreams {
                    if let Some(m) = self.multi.get(a).and_then(|s| s.get_min()) {
                        return Err(err(id, shared(m)));
                    }
                }
                for a in &c.upstreams {
                    add_to(&mut self.single, *a, id);
                }
            }
        }
        Ok(())
    }

    fn remove(&mut self, c: &Compiled) {
        let id = c.record.id.as_str();
        if let Some(p) = c.prefix {
            if self.prefixes.get(&p).is_some_and(|o| o == id) {
                self.prefixes.remove(&p);
            }
        }
        for a in &c.upstreams {
            remove_from(&mut self.multi, *a, id);
            remove_from(&mut self.single, *a, id);
        }
    }
}

/// A catalog checked for serving (see [`compile`]).
#[derive(Debug, Clone)]
pub struct Checked {
    pub(super) catalog: Arc<Catalog>,
    /// Live clusters by id.
    pub(super) clusters: imbl::OrdMap<String, Compiled>,
    /// Every named pool's addresses (empty for an unused pool whose names do not resolve).
    pub(super) pools: Vec<(Arc<PoolSpec>, Vec<SocketAddr>)>,
    isolation: Isolation,
}

impl Checked {
    /// The catalog checked.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Checks `next`, which differs from this check's catalog by `d` (with the same
    /// settings): only the clusters `d` names are resolved and checked again.
    pub fn update(
        &self,
        next: &Arc<Catalog>,
        d: &Diff,
        settings: &Settings,
        resolve: Resolve<'_>,
    ) -> Result<Checked, RegistryError> {
        let mut out = Checked {
            catalog: next.clone(),
            ..self.clone()
        };
        let mut names = Names::new(resolve);
        let found = names.pools(settings);
        for (id, _) in &d.clusters {
            if let Some(old) = out.clusters.remove(id) {
                out.isolation.remove(&old);
            }
        }
        for (id, _) in &d.clusters {
            let Some(c) = next.clusters.get(id).filter(|c| c.is_live()) else {
                continue;
            };
            let compiled = names.compile(c, settings, &found)?;
            out.isolation.add(&compiled)?;
            out.clusters.insert(id.clone(), compiled);
        }
        Ok(out)
    }
}

/// Resolves `host:port` (DNS) to every address it has: what [`compile`] uses where no
/// cache of lookups is kept (tests, benchmarks; the control plane keeps one, see
/// `nodes::resolve`).
pub fn resolve(u: &str) -> Result<Vec<SocketAddr>, String> {
    let addrs: Vec<SocketAddr> = u
        .to_socket_addrs()
        .map_err(|e| format!("upstream `{u}`: {e}"))?
        .collect();
    if addrs.is_empty() {
        return Err(format!("upstream `{u}` resolves to nothing"));
    }
    Ok(addrs)
}

/// How names are resolved for [`compile`]: `host:port` to every address.
pub type Resolve<'a> = &'a dyn Fn(&str) -> Result<Vec<SocketAddr>, String>;

type Found = Result<Vec<SocketAddr>, String>;

/// Names resolved once per check.
struct Names<'a> {
    resolve: Resolve<'a>,
    cache: HashMap<String, Found>,
}

impl<'a> Names<'a> {
    fn new(resolve: Resolve<'a>) -> Names<'a> {
        Names {
            resolve,
            cache: HashMap::new(),
        }
    }

    /// Every address of every name of `list`, each once.
    fn addrs_of(&mut self, list: &[String]) -> Found {
        let mut out = Vec::with_capacity(list.len());
        for u in list {
            let resolve = self.resolve;
            let found = self.cache.entry(u.clone()).or_insert_with(|| resolve(u));
            for a in found.clone()? {
                if !out.contains(&a) {
                    out.push(a);
                }
            }
        }
        Ok(out)
    }

    /// The settings' pools, each with its nodes' addresses or why they do not resolve.
    fn pools(&mut self, settings: &Settings) -> Vec<(Arc<PoolSpec>, Found)> {
        settings
            .pools
            .iter()
            .map(|p| (p.clone(), self.addrs_of(&p.nodes)))
            .collect()
    }

    /// Live cluster `c` resolved, its prefix derived.
    fn compile(
        &mut self,
        c: &Arc<ClusterRecord>,
        settings: &Settings,
        pools: &[(Arc<PoolSpec>, Found)],
    ) -> Result<Compiled, RegistryError> {
        let err = |message: String| RegistryError {
            cluster: c.id.clone(),
            message,
        };
        let (upstreams, pool) = match &c.upstream {
            Some(list) => match pool_named(list) {
                Some(name) => {
                    let (spec, found) = pools
                        .iter()
                        .find(|(p, _)| p.name == name)
                        .ok_or_else(|| err(format!("no upstream pool named `{name}`")))?;
                    let addrs = found
                        .clone()
                        .map_err(|e| err(format!("pool `{name}`: {e}")))?;
                    (addrs, Some(Arc::from(spec.name.as_str())))
                }
                None => (self.addrs_of(list).map_err(err)?, None),
            },
            None => (
                vec![settings
                    .engine
                    .ok_or_else(|| err("no upstream and no engine".into()))?],
                None,
            ),
        };
        let prefix =
            (c.class == ClusterClass::Multitenant).then(|| Prefix::derive(&settings.key, &c.id));
        Ok(Compiled {
            record: c.clone(),
            upstreams,
            pool,
            prefix,
        })
    }
}

/// Checks that `cat` can be served: every live cluster's upstreams resolve (with
/// `resolve`; a pool's name must be one of `settings.pools`), and tenants of a shared
/// upstream are isolated. Changes nothing.
pub fn compile(
    cat: &Arc<Catalog>,
    settings: &Settings,
    resolve: Resolve<'_>,
) -> Result<Checked, RegistryError> {
    let mut names = Names::new(resolve);
    let pools = names.pools(settings);
    let mut out = Checked {
        catalog: cat.clone(),
        clusters: imbl::OrdMap::new(),
        pools: Vec::new(),
        isolation: Isolation::default(),
    };
    for c in cat.live() {
        let compiled = names.compile(c, settings, &pools)?;
        out.isolation.add(&compiled)?;
        out.clusters.insert(c.id.clone(), compiled);
    }
    out.pools = pools
        .into_iter()
        .map(|(p, found)| (p, found.unwrap_or_default()))
        .collect();
    Ok(out)
}
