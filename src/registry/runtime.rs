//! Runtime state that lives outside the catalog, by cluster id: each cluster's allowance
//! (requests in flight and queued, shared by every core) and its [`ClusterState`]
//! (readiness, usage). Reconciled from a [`Diff`] only after the change
//! was committed: a refused or failed change never reaches it.
//!
//! Must not touch: the catalog (it reads it), I/O, the clock.

use std::collections::HashMap;
use std::sync::Arc;

use super::catalog::{Catalog, ClusterRecord};
use super::diff::{ClusterChange, Diff};
use super::state::ClusterState;
use crate::config::ClusterClass;
use crate::policy::admit::{Allowance, Lanes, Split};

/// One cluster's runtime handles (the edge's snapshot holds clones of them).
#[derive(Debug, Clone)]
pub struct Handles {
    pub allowance: Arc<Allowance>,
    pub lanes: Lanes,
    pub state: Arc<ClusterState>,
}

/// Every live cluster's handles.
#[derive(Debug, Default)]
pub struct Runtime {
    clusters: HashMap<String, Handles>,
}

impl Runtime {
    /// Handles for every live cluster of `cat` (at start).
    pub fn new(cat: &Catalog) -> Runtime {
        let mut rt = Runtime::default();
        for c in cat.live() {
            rt.add(cat, c);
        }
        rt
    }

    /// The handles of every cluster of `snap` (to carry them to a snapshot built anew).
    pub fn of_snapshot(snap: &super::Snapshot) -> Runtime {
        let clusters = snap
            .clusters()
            .map(|c| {
                let h = Handles {
                    allowance: c.allowance.clone(),
                    lanes: c.lanes.clone(),
                    state: c.state.clone(),
                };
                (c.id.clone(), h)
            })
            .collect();
        Runtime { clusters }
    }

    /// The handles of cluster `id`.
    pub fn get(&self, id: &str) -> Option<&Handles> {
        self.clusters.get(id)
    }

    fn add(&mut self, cat: &Catalog, c: &ClusterRecord) {
        let (limit, queue) = limits(cat, c);
        // The shared engine of the multitenant class is up; a single-tenant cluster's
        // upstream must answer first.
        let ready = c.class == ClusterClass::Multitenant;
        self.clusters.insert(
            c.id.clone(),
            Handles {
                allowance: Arc::new(Allowance::new(limit, queue)),
                lanes: Lanes::new(&split(cat, c)),
                state: Arc::new(ClusterState::new(ready)),
            },
        );
    }

    /// Brings the handles in line with `diff` (from the catalog before to `new`): new
    /// clusters get fresh handles, removed ones lose theirs, a cluster whose plan or plan
    /// limits changed has its allowance resized at once (requests already queued
    /// included), and a single-tenant cluster that moved upstream is not ready until the
    /// new one answers.
    pub fn reconcile(&mut self, diff: &Diff, new: &Catalog) {
        for (id, change) in &diff.clusters {
            match change {
                ClusterChange::Removed => {
                    self.clusters.remove(id);
                }
                ClusterChange::Added => {
                    if let Some(c) = new.clusters.get(id) {
                        self.add(new, c);
                    }
                }
                ClusterChange::Changed(f) => {
                    let (Some(c), Some(h)) = (new.clusters.get(id), self.clusters.get(id)) else {
                        continue;
                    };
                    if f.limits {
                        let (limit, queue) = limits(new, c);
                        h.allowance.resize(limit, queue);
                        h.lanes.resize(&split(new, c));
                    }
                    if f.upstream {
                        h.state.set_ready(c.class == ClusterClass::Multitenant);
                    }
                }
            }
        }
    }
}

fn limits(cat: &Catalog, c: &ClusterRecord) -> (u32, u32) {
    cat.plans
        .get(&c.plan)
        .map_or((1, 0), |p| (p.concurrency, p.queue_size))
}

fn split(cat: &Catalog, c: &ClusterRecord) -> Split {
    cat.plans
        .get(&c.plan)
        .and_then(|p| p.split().ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::tests::{ctx, plan, record, with};
    use crate::registry::catalog::{apply, Command};
    use crate::registry::diff::diff;

    #[test]
    fn reconcile_resizes_adds_and_removes() {
        let a = with(
            &[plan("p", 2), plan("q", 5)],
            &[record("a", "p"), record("b", "p")],
        );
        let mut rt = Runtime::new(&a);
        let allowance = rt.get("a").unwrap().allowance.clone();
        assert_eq!(allowance.limit(), 2);
        let cmds = [
            Command::ChangePlan {
                id: "a".into(),
                plan: "q".into(),
            },
            Command::Destroy { id: "b".into() },
            Command::CreateCluster(Box::new(record("c", "q"))),
        ];
        let b = crate::registry::catalog::apply_all(&a, &cmds, &ctx(1)).unwrap();
        rt.reconcile(&diff(&a, &b), &b);
        assert!(Arc::ptr_eq(&allowance, &rt.get("a").unwrap().allowance));
        assert_eq!(allowance.limit(), 5, "resized in place");
        assert!(rt.get("b").is_none());
        assert_eq!(rt.get("c").unwrap().allowance.limit(), 5);
    }

    // issue 11: a refused change must change nothing, runtime state included
    #[test]
    fn a_refused_change_leaves_the_runtime_alone() {
        let a = with(&[plan("p", 2)], &[record("a", "p")]);
        let rt = Runtime::new(&a);
        let refused = apply(
            &a,
            &Command::ChangePlan {
                id: "a".into(),
                plan: "nope".into(),
            },
            &ctx(1),
        );
        assert!(refused.is_err());
        assert_eq!(rt.get("a").unwrap().allowance.limit(), 2);
        assert!(rt.get("a").unwrap().state.is_ready());
    }
}
