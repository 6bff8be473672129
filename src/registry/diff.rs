//! What changed between two catalogs: which live clusters appeared, went, or changed and in
//! what (limits, mode, credentials, address, upstream), and which records changed at all
//! (tombstones included: the store writes those). Pure; the runtime state is reconciled
//! from a [`Diff`] (see `runtime`), and the control plane derives its events from it.
//!
//! Must not touch: runtime state, I/O.

use std::collections::BTreeSet;
use std::sync::Arc;

use imbl::ordmap::DiffItem;

use super::catalog::{Catalog, ClusterRecord};

/// What changed in a cluster that stayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fields {
    /// Its plan, or its plan's limits.
    pub limits: bool,
    pub mode: bool,
    pub credentials: bool,
    /// Host name or region.
    pub address: bool,
    pub upstream: bool,
    /// Provisioned, the overage, or another bookkeeping field.
    pub other: bool,
}

/// A live cluster's change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterChange {
    Added,
    /// Destroyed, or gone from the catalog.
    Removed,
    Changed(Fields),
}

/// The difference between two catalogs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diff {
    /// Live clusters that appeared, went or changed, by id.
    pub clusters: Vec<(String, ClusterChange)>,
    /// Ids whose stored record differs (live or not).
    pub records: Vec<String>,
    /// Plans added, removed or changed.
    pub plans: Vec<String>,
}

impl Diff {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.plans.is_empty() && self.clusters.is_empty()
    }
}

fn fields(a: &ClusterRecord, b: &ClusterRecord, plan_changed: bool) -> Fields {
    Fields {
        limits: a.plan != b.plan || plan_changed,
        mode: a.mode != b.mode || a.mode_reason != b.mode_reason || a.mode_until != b.mode_until,
        credentials: a.username != b.username
            || a.password != b.password
            || a.previous != b.previous,
        address: a.hostname != b.hostname || a.region != b.region,
        upstream: a.upstream != b.upstream || a.class != b.class,
        other: a.provisioned_at != b.provisioned_at || a.name != b.name || a.overage != b.overage,
    }
}

/// What changed from `a` to `b`. When no plan changed, only the records the two
/// catalogs do not share are compared (their persistent maps skip what they share), so
/// the cost is the change's, not the catalog's.
pub fn diff(a: &Catalog, b: &Catalog) -> Diff {
    let mut out = Diff::default();
    let names: BTreeSet<&String> = a.plans.keys().chain(b.plans.keys()).collect();
    for name in names {
        let same = match (a.plans.get(name), b.plans.get(name)) {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x == y,
            _ => false,
        };
        if !same {
            out.plans.push(name.clone());
        }
    }
    if out.plans.is_empty() {
        for item in a.clusters.diff(&b.clusters) {
            match item {
                DiffItem::Add(id, new) => out.consider(id, None, Some(new), false),
                DiffItem::Update {
                    old: (id, old),
                    new: (_, new),
                } => out.consider(id, Some(old), Some(new), false),
                DiffItem::Remove(id, old) => out.consider(id, Some(old), None, false),
            }
        }
    } else {
        let changed_plans: BTreeSet<String> = out.plans.iter().cloned().collect();
        for (id, old) in &a.clusters {
            if !b.clusters.contains_key(id) {
                out.consider(id, Some(old), None, false);
            }
        }
        for (id, new) in &b.clusters {
            let plan_changed = changed_plans.contains(&new.plan);
            out.consider(id, a.clusters.get(id), Some(new), plan_changed);
        }
    }
    out.records.sort();
    out
}

impl Diff {
    /// Records what became of cluster `id` (`old` in the first catalog, `new` in the
    /// second; `plan_changed`: its plan's limits changed).
    fn consider(
        &mut self,
        id: &str,
        old: Option<&Arc<ClusterRecord>>,
        new: Option<&Arc<ClusterRecord>>,
        plan_changed: bool,
    ) {
        let Some(new) = new else {
            self.records.push(id.to_string());
            if old.is_some_and(|o| o.is_live()) {
                self.clusters.push((id.to_string(), ClusterChange::Removed));
            }
            return;
        };
        let same_record = old.is_some_and(|o| Arc::ptr_eq(o, new) || **o == **new);
        if !same_record {
            self.records.push(id.to_string());
        }
        let change = match old.filter(|o| o.is_live()) {
            None if new.is_live() => Some(ClusterChange::Added),
            None => None,
            Some(_) if !new.is_live() => Some(ClusterChange::Removed),
            Some(_) if same_record && !plan_changed => None,
            Some(o) => Some(ClusterChange::Changed(fields(o, new, plan_changed))),
        };
        if let Some(c) = change {
            self.clusters.push((id.to_string(), c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::tests::{ctx, plan, record, with};
    use crate::registry::catalog::{apply, Command};

    #[test]
    fn no_change_is_an_empty_diff() {
        let a = with(&[plan("p", 2)], &[record("a", "p")]);
        assert!(diff(&a, &a.clone()).is_empty());
    }

    #[test]
    fn added_removed_and_changed_clusters() {
        let a = with(
            &[plan("p", 2), plan("q", 4)],
            &[record("a", "p"), record("b", "p")],
        );
        let b = apply(&a, &Command::Destroy { id: "b".into() }, &ctx(5)).unwrap();
        let b = apply(
            &b,
            &Command::ChangePlan {
                id: "a".into(),
                plan: "q".into(),
            },
            &ctx(6),
        )
        .unwrap();
        let b = apply(
            &b,
            &Command::CreateCluster(Box::new(record("c", "p"))),
            &ctx(7),
        )
        .unwrap();
        let d = diff(&a, &b);
        let limits = Fields {
            limits: true,
            ..Fields::default()
        };
        assert_eq!(
            d.clusters,
            vec![
                ("a".to_string(), ClusterChange::Changed(limits)),
                ("b".to_string(), ClusterChange::Removed),
                ("c".to_string(), ClusterChange::Added),
            ]
        );
        assert_eq!(d.records, vec!["a", "b", "c"]);
        assert!(d.plans.is_empty());
    }

    // spec 1.8: a plan's new limits reach every cluster on it
    #[test]
    fn a_plan_change_changes_the_limits_of_its_clusters() {
        let a = with(&[plan("p", 2)], &[record("a", "p")]);
        let b = apply(&a, &Command::PutPlan(plan("p", 3)), &ctx(1)).unwrap();
        let d = diff(&a, &b);
        assert_eq!(d.plans, vec!["p"]);
        assert!(d.records.is_empty(), "no cluster record changed");
        assert!(matches!(
            d.clusters[..],
            [(_, ClusterChange::Changed(Fields { limits: true, .. }))]
        ));
    }
}
