//! [`Lookup`]: the snapshot's map for the request path (a cluster by host, by username,
//! by id): as fast as one map over every cluster, yet the next snapshot copies only the
//! shards a change touched. A key is hashed once, with std's keyed hasher (SipHash, random
//! keys per lookup, so no client can aim keys at one bucket): bits 32..40 of that hash pick
//! the shard, and the same hash finds the entry in the shard's table (hashbrown's
//! `HashTable`, which takes a hash computed outside; std's `HashMap` would hash the key a
//! second time). Each shard is shared by `Arc` between snapshots until a change writes to
//! it. A copy keeps the hasher's keys, so every copy places keys alike.
//!
//! Must not touch: anything but its own entries.

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use hashbrown::hash_table::{Entry, HashTable};

/// Shards of a lookup: at 100k keys about 400 keys a shard, so one change copies a few
/// hundred entries, and a snapshot copies 256 pointers.
const SHARDS: usize = 256;

/// A map from `String` to `V` in shards shared between snapshots.
#[derive(Debug, Clone)]
pub struct Lookup<V> {
    hasher: RandomState,
    shards: Vec<Arc<HashTable<(String, V)>>>,
}

impl<V> Default for Lookup<V> {
    fn default() -> Self {
        Lookup {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Arc::new(HashTable::new())).collect(),
        }
    }
}

/// The shard of a key's hash: bits the shard's table does not use (it takes its bucket
/// from the low bits and its tag from the top seven).
#[inline]
fn shard_of(hash: u64) -> usize {
    (hash >> 32) as u8 as usize
}

impl<V: Clone> Lookup<V> {
    /// The key's hash and its shard.
    #[inline]
    fn place(&self, key: &str) -> (u64, usize) {
        let hash = self.hasher.hash_one(key);
        (hash, shard_of(hash))
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&V> {
        let (hash, i) = self.place(key);
        self.shards[i].find(hash, |(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` has a value.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key` to `value` (its shard copied first if a snapshot shares it).
    pub fn insert(&mut self, key: String, value: V) {
        let (hash, i) = self.place(&key);
        let hasher = &self.hasher;
        let shard = Arc::make_mut(&mut self.shards[i]);
        let entry = shard.entry(
            hash,
            |(k, _)| *k == key,
            |(k, _)| hasher.hash_one(k.as_str()),
        );
        match entry {
            Entry::Occupied(mut e) => e.get_mut().1 = value,
            Entry::Vacant(e) => {
                e.insert((key, value));
            }
        }
    }

    /// Takes `key` out (its shard copied first if a snapshot shares it and `key` is there).
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let (hash, i) = self.place(key);
        self.shards[i].find(hash, |(k, _)| k == key)?;
        let shard = Arc::make_mut(&mut self.shards[i]);
        let found = shard.find_entry(hash, |(k, _)| k == key).ok()?;
        Some(found.remove().0 .1)
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
