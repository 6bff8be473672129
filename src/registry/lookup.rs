//! [`Lookup`]: the snapshot's map for the request path (a cluster by host, by username,
//! by id): a plain `HashMap` read, as fast as one map over every cluster, yet the next
//! snapshot copies only the shards a change touched. Keys are spread over a fixed number
//! of shards by a cheap hash of the key; each shard is an ordinary `HashMap` (std's keyed
//! hasher, so lookups cost what they did before the catalog became persistent) shared by
//! `Arc` between snapshots until a change writes to it.
//!
//! Must not touch: anything but its own entries.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use rustc_hash::FxBuildHasher;

/// Shards of a lookup: at 100k keys about 400 keys a shard, so one change copies a few
/// hundred entries, and a snapshot copies 256 pointers.
const SHARDS: usize = 256;

/// A map from `String` to `V` in shards shared between snapshots.
#[derive(Debug, Clone)]
pub struct Lookup<V> {
    shards: Vec<Arc<HashMap<String, V>>>,
}

impl<V> Default for Lookup<V> {
    fn default() -> Self {
        Lookup {
            shards: (0..SHARDS).map(|_| Arc::new(HashMap::new())).collect(),
        }
    }
}

fn shard_of<Q: Hash + ?Sized>(key: &Q) -> usize {
    // rustc-hash's `finish` brings its best bits down to the low ones.
    FxBuildHasher.hash_one(key) as usize % SHARDS
}

impl<V: Clone> Lookup<V> {
    /// The value of `key`.
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        String: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shards[shard_of(key)].get(key)
    }

    /// Whether `key` has a value.
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        String: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get(key).is_some()
    }

    /// Sets `key` to `value` (its shard copied first if a snapshot shares it).
    pub fn insert(&mut self, key: String, value: V) {
        Arc::make_mut(&mut self.shards[shard_of(key.as_str())]).insert(key, value);
    }

    /// Takes `key` out (its shard copied first if a snapshot shares it and `key` is there).
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let i = shard_of(key);
        if !self.shards[i].contains_key(key) {
            return None;
        }
        Arc::make_mut(&mut self.shards[i]).remove(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A copy shares every shard a later change does not write to, and a change made to
    // the copy is not seen by the original.
    #[test]
    fn a_copy_shares_untouched_shards_and_changes_alone() {
        let mut a = Lookup::default();
        for i in 0..10_000 {
            a.insert(format!("k{i}"), i);
        }
        let mut b = a.clone();
        b.insert("k1".into(), -1);
        assert_eq!(b.remove("k2"), Some(2));
        assert_eq!(b.remove("absent"), None);
        b.insert("new".into(), 7);
        assert_eq!(
            (a.get("k1"), a.get("k2"), a.get("new")),
            (Some(&1), Some(&2), None)
        );
        assert_eq!(
            (b.get("k1"), b.get("k2"), b.get("new")),
            (Some(&-1), None, Some(&7))
        );
        let shared = a
            .shards
            .iter()
            .zip(&b.shards)
            .filter(|(x, y)| Arc::ptr_eq(x, y))
            .count();
        assert!(shared >= SHARDS - 3, "{shared} of {SHARDS} shards shared");
        assert!(a.contains_key("k9999") && !a.contains_key("k10000"));
        assert!(
            a.shards.iter().all(|s| s.len() > 10),
            "keys spread over every shard"
        );
    }
}
