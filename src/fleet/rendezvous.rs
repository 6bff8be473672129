//! Rendezvous (highest-random-weight) hashing: the home of a cluster is the live node whose
//! score for the cluster's key is highest. Every node computes the same home from the same
//! list of names, with no table to agree on; a node joining takes from every other node
//! only the keys it now scores highest on, a node leaving gives away only its own keys.
//!
//! The score is a fixed function of the two names (FNV-1a over `node`, a separator and
//! `key`, then the SplitMix64 finaliser), so every version and every machine agrees, and
//! a balancer can compute it too (docs/fleet.md).
//!
//! Must not touch: anything but names (pure; no clock, no I/O).

/// The score of node `node` for key `key`.
pub fn score(node: &str, key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    node.bytes().for_each(&mut eat);
    eat(0xff); // never in a name: `ab`+`c` and `a`+`bc` differ
    key.bytes().for_each(&mut eat);
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The index in `nodes` of the home of `key`: the highest score, ties to the smaller
/// name. `None` when `nodes` is empty.
pub fn home<S: AsRef<str>>(nodes: &[S], key: &str) -> Option<usize> {
    let mut best: Option<(u64, &str, usize)> = None;
    for (i, n) in nodes.iter().enumerate() {
        let n = n.as_ref();
        let s = score(n, key);
        let better = match best {
            None => true,
            Some((bs, bn, _)) => s > bs || (s == bs && n < bn),
        };
        if better {
            best = Some((s, n, i));
        }
    }
    best.map(|(_, _, i)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn homes<'a>(nodes: &[&'a str], keys: &[String]) -> Vec<&'a str> {
        keys.iter()
            .map(|k| nodes[home(nodes, k).expect("a node")])
            .collect()
    }

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("cluster-{i}")).collect()
    }

    // The score is a fixed function: these values are what every node (and a balancer
    // computing the same hash) must find.
    #[test]
    fn scores_are_fixed_and_order_does_not_matter() {
        assert_eq!(score("edge-1", "k7"), 7643676026530371644);
        assert_eq!(score("edge-2", "k7"), 15951618500031402802);
        assert_eq!(score("edge-3", "k7"), 11415052029517236044);
        let table: &[(&[&str], &str, &str)] = &[
            (&["a"], "c1", "a"),
            (&["edge-1", "edge-2", "edge-3"], "k7", "edge-2"),
            (&["edge-3", "edge-2", "edge-1"], "k7", "edge-2"),
            (&["edge-1", "edge-3"], "k7", "edge-3"),
        ];
        for (nodes, key, want) in table {
            let got = nodes[home(nodes, key).unwrap()];
            let all: Vec<_> = nodes.iter().map(|n| (n, score(n, key))).collect();
            assert_eq!(got, *want, "{key} over {nodes:?}: {all:?}");
        }
        assert_eq!(home::<&str>(&[], "k"), None);
        assert_ne!(score("ab", "c"), score("a", "bc"));
        assert_eq!(score("edge-1", "k7"), score("edge-1", "k7"));
    }

    // A node leaving moves only the keys it was home of; one joining takes only keys it
    // becomes home of, about its share.
    #[test]
    fn joining_and_leaving_move_only_their_share() {
        let ks = keys(3000);
        let three = ["n1", "n2", "n3"];
        let before = homes(&three, &ks);
        for (i, n) in three.iter().enumerate() {
            let share = before.iter().filter(|h| *h == n).count();
            assert!(
                (800..1200).contains(&share),
                "{n} is home of {share} of 3000"
            );
            let mut rest = three.to_vec();
            rest.remove(i);
            let after = homes(&rest, &ks);
            for (b, a) in before.iter().zip(&after) {
                if b != n {
                    assert_eq!(a, b, "a key not on the leaving node moved");
                }
            }
        }
        let four = ["n1", "n2", "n3", "n4"];
        let after = homes(&four, &ks);
        let moved = before.iter().zip(&after).filter(|(b, a)| b != a).count();
        for (b, a) in before.iter().zip(&after) {
            assert!(a == b || *a == "n4", "a key moved between old nodes");
        }
        assert!((550..950).contains(&moved), "{moved} of 3000 moved to n4");
    }
}
