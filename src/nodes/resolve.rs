//! Upstream host names and the addresses they resolve to. The control plane compiles its
//! catalogs through [`Resolver::resolve`] (a name is looked up on first use, then served
//! from here); the checker thread calls [`Resolver::refresh`] every `resolve_interval`,
//! and when a name's addresses change the control plane publishes the snapshot again
//! ([`Resolver::take_changed`]). A name that stops resolving keeps its last addresses,
//! and the failure is logged and counted. Workers never resolve.
//!
//! The lookup itself is injected ([`Lookup`]) so what a fresh answer does ([`merge`]) is
//! table-tested without DNS. Must not touch: the registry, the book of nodes.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Looks `host:port` up: every address it has.
pub type Lookup = Box<dyn Fn(&str) -> std::io::Result<Vec<SocketAddr>> + Send + Sync>;

/// What a fresh lookup makes of a name's addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    /// The same addresses.
    Same,
    /// These (sorted, no duplicates) from now on.
    Changed(Vec<SocketAddr>),
    /// The lookup failed or found nothing: the previous addresses stay.
    Kept(String),
}

/// The addresses `found` for a name that had `prev` (sorted): a failure or an empty
/// answer keeps `prev`.
pub fn merge(prev: &[SocketAddr], found: std::io::Result<Vec<SocketAddr>>) -> Merge {
    match found {
        Err(e) => Merge::Kept(e.to_string()),
        Ok(v) if v.is_empty() => Merge::Kept("no address".into()),
        Ok(mut v) => {
            v.sort();
            v.dedup();
            if v == prev {
                Merge::Same
            } else {
                Merge::Changed(v)
            }
        }
    }
}

/// The addresses hosts-format `text` gives the host of `name` (`host:port`), with its
/// port; `None` when it does not name the host.
pub fn hosts_lookup(text: &str, name: &str) -> Option<Vec<SocketAddr>> {
    let (host, port) = name.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let found: Vec<SocketAddr> = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let ip: std::net::IpAddr = words.next()?.parse().ok()?;
            words
                .any(|w| w.eq_ignore_ascii_case(host))
                .then_some(SocketAddr::new(ip, port))
        })
        .collect();
    (!found.is_empty()).then_some(found)
}

#[derive(Debug, Clone, Default)]
struct Entry {
    addrs: Vec<SocketAddr>,
    /// The last lookup failed (the addresses are those of an earlier one).
    failing: bool,
    failures: u64,
}

/// A name's state for the metrics and the admin API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameView {
    pub name: String,
    pub addrs: Vec<SocketAddr>,
    pub failing: bool,
    pub failures: u64,
}

/// The names in use and their addresses.
pub struct Resolver {
    lookup: Lookup,
    names: Mutex<BTreeMap<String, Entry>>,
    changed: AtomicBool,
    failures: AtomicU64,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl Default for Resolver {
    fn default() -> Self {
        Resolver::system()
    }
}

impl Resolver {
    /// Resolving with the system's resolver (`getaddrinfo`).
    pub fn system() -> Self {
        Resolver::with(Box::new(|u| u.to_socket_addrs().map(Iterator::collect)))
    }

    /// The resolver of this process: the system's; for tests only (`SEARCHGATE_DEBUG_HOOKS=1`
    /// and `SEARCHGATE_TEST_HOSTS=<file>` both in the environment), names found in that
    /// hosts-format file (`address name...` lines) resolve to every address it gives them,
    /// read again at each lookup, so a test can give a name several addresses and change
    /// them; other names go to the system's resolver.
    pub fn for_process() -> Self {
        let hooks = std::env::var(crate::config::DEBUG_HOOKS_ENV).ok();
        match (hooks.as_deref(), std::env::var_os("SEARCHGATE_TEST_HOSTS")) {
            (Some("1"), Some(file)) => {
                eprintln!(
                    "searchgate: WARNING: host names are looked up in {file:?} first (tests only)"
                );
                Resolver::with(Box::new(move |u| {
                    let text = std::fs::read_to_string(&file).unwrap_or_default();
                    match hosts_lookup(&text, u) {
                        Some(found) => Ok(found),
                        None => u.to_socket_addrs().map(Iterator::collect),
                    }
                }))
            }
            _ => Resolver::system(),
        }
    }

    /// Resolving with `lookup`.
    pub fn with(lookup: Lookup) -> Self {
        Resolver {
            lookup,
            names: Mutex::default(),
            changed: AtomicBool::new(false),
            failures: AtomicU64::new(0),
        }
    }

    /// Every address of `name` (`host:port`): the last lookup's, or a lookup now if it
    /// was never resolved (an address literal needs none and is not kept).
    pub fn resolve(&self, name: &str) -> Result<Vec<SocketAddr>, String> {
        if let Ok(a) = name.parse::<SocketAddr>() {
            return Ok(vec![a]);
        }
        if let Some(e) = self.lock().get(name) {
            return Ok(e.addrs.clone());
        }
        match merge(&[], (self.lookup)(name)) {
            Merge::Changed(addrs) => {
                let entry = Entry {
                    addrs: addrs.clone(),
                    ..Entry::default()
                };
                self.lock().insert(name.to_string(), entry);
                Ok(addrs)
            }
            Merge::Same => Err(format!("upstream `{name}` resolves to nothing")),
            Merge::Kept(e) => Err(format!("upstream `{name}`: {e}")),
        }
    }

    /// Looks every name up again (the lock is not held while looking up). Returns how
    /// many changed; a failure keeps the name's addresses, is logged once until the name
    /// resolves again, and counted.
    pub fn refresh(&self) -> usize {
        let names: Vec<(String, Vec<SocketAddr>)> = self
            .lock()
            .iter()
            .map(|(n, e)| (n.clone(), e.addrs.clone()))
            .collect();
        let mut changed = 0;
        for (name, prev) in names {
            let m = merge(&prev, (self.lookup)(&name));
            let mut map = self.lock();
            let Some(e) = map.get_mut(&name) else {
                continue;
            };
            match m {
                Merge::Same => e.failing = false,
                Merge::Changed(addrs) => {
                    eprintln!("searchgate: upstream `{name}` now resolves to {addrs:?}");
                    (e.addrs, e.failing) = (addrs, false);
                    changed += 1;
                }
                Merge::Kept(why) => {
                    if !e.failing {
                        eprintln!(
                            "searchgate: upstream `{name}` no longer resolves ({why}): keeping {:?}",
                            e.addrs
                        );
                    }
                    e.failing = true;
                    e.failures += 1;
                    self.failures.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if changed > 0 {
            self.changed.store(true, Ordering::Release);
        }
        changed
    }

    /// Whether addresses changed since the last call (the snapshot must be published again).
    pub fn take_changed(&self) -> bool {
        self.changed.swap(false, Ordering::AcqRel)
    }

    /// Failed lookups since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Every name kept, sorted.
    pub fn names(&self) -> Vec<NameView> {
        self.lock()
            .iter()
            .map(|(n, e)| NameView {
                name: n.clone(),
                addrs: e.addrs.clone(),
                failing: e.failing,
                failures: e.failures,
            })
            .collect()
    }

    /// Forgets the names `keep` says are no longer used.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.lock().retain(|n, _| keep(n));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.names.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::Arc;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    // issue 28 (DNS): a fresh answer replaces the addresses, sorted and deduplicated; a
    // failed or empty one keeps them
    #[test]
    fn merge_table() {
        let (x, y, z) = (a("10.0.0.1:9200"), a("10.0.0.2:9200"), a("[::1]:9200"));
        let fail = || Err(io::Error::other("NXDOMAIN"));
        let cases: Vec<(Vec<SocketAddr>, io::Result<Vec<SocketAddr>>, Merge)> = vec![
            (vec![], Ok(vec![y, x, y]), Merge::Changed(vec![x, y])),
            (vec![x, y], Ok(vec![y, x]), Merge::Same),
            (vec![x, y], Ok(vec![x, y, z]), Merge::Changed(vec![x, y, z])),
            (vec![x, y], Ok(vec![y]), Merge::Changed(vec![y])),
            (vec![x, y], fail(), Merge::Kept("NXDOMAIN".into())),
            (vec![x], Ok(vec![]), Merge::Kept("no address".into())),
        ];
        for (prev, found, want) in cases {
            assert_eq!(merge(&prev, found), want, "from {prev:?}");
        }
    }

    // issue 28 (DNS): the tests' hosts file gives a name each address of its lines.
    #[test]
    fn a_hosts_file_gives_names_every_address_of_their_lines() {
        let text =
            "127.0.0.2 multi.test other\n# 127.0.0.9 multi.test\n::1 Multi.Test\nbad multi.test\n";
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let table: [(&str, Option<Vec<SocketAddr>>); 5] = [
            (
                "multi.test:9200",
                Some(vec![a("127.0.0.2:9200"), a("[::1]:9200")]),
            ),
            ("other:1", Some(vec![a("127.0.0.2:1")])),
            ("absent:9200", None),
            ("multi.test", None),
            ("multi.test:x", None),
        ];
        for (name, want) in table {
            assert_eq!(hosts_lookup(text, name), want, "{name}");
        }
    }

    // issue 28 (DNS): every address of a name is used; a name that stops resolving keeps
    // its addresses and is counted; a change is announced once
    #[test]
    fn a_resolver_keeps_every_address_and_the_last_good_answer() {
        let answer: Arc<Mutex<io::Result<Vec<SocketAddr>>>> =
            Arc::new(Mutex::new(Ok(vec![a("10.0.0.2:9200"), a("10.0.0.1:9200")])));
        let given = answer.clone();
        let r = Resolver::with(Box::new(move |_| match &*given.lock().unwrap() {
            Ok(v) => Ok(v.clone()),
            Err(e) => Err(io::Error::other(e.to_string())),
        }));
        let both = vec![a("10.0.0.1:9200"), a("10.0.0.2:9200")];
        assert_eq!(r.resolve("es.example:9200"), Ok(both.clone()));
        assert_eq!(r.resolve("127.0.0.1:1"), Ok(vec![a("127.0.0.1:1")]));
        assert_eq!(r.names().len(), 1, "literals are not kept");
        assert_eq!(r.refresh(), 0);
        assert!(!r.take_changed());
        *answer.lock().unwrap() = Err(io::Error::other("NXDOMAIN"));
        assert_eq!(r.refresh(), 0);
        assert_eq!(r.refresh(), 0);
        assert_eq!(r.resolve("es.example:9200"), Ok(both), "kept");
        assert_eq!(r.failures(), 2);
        assert!(r.names()[0].failing);
        *answer.lock().unwrap() = Ok(vec![a("10.0.0.3:9200")]);
        assert_eq!(r.refresh(), 1);
        assert!(r.take_changed());
        assert!(!r.take_changed(), "announced once");
        assert_eq!(r.resolve("es.example:9200"), Ok(vec![a("10.0.0.3:9200")]));
        assert!(!r.names()[0].failing);
        r.retain(|_| false);
        assert!(r.names().is_empty());
    }
}
