//! The per-cluster prefix: derivation from a node secret, and its removal from bytes going
//! back to the tenant (one-shot for header values, streaming for bodies).
//!
//! A prefix is `PREFIX_LEN` bytes: 20 characters of lowercase base32 (`a-z`, `2-7`; 100 bits
//! of HMAC-SHA256 of the cluster id under the node secret) and a `-`. Every byte is one
//! that JSON, URLs and `_cat` text never escape, so the prefix appears verbatim wherever the
//! upstream echoes a name. See `docs/tenancy.md` for why no tenant can forge or collide.
//!
//! Must not touch: paths, bodies' structure, I/O.

use std::fmt;

use memchr::memmem;
use ring::hmac;

/// Length of every prefix, in bytes.
pub const PREFIX_LEN: usize = 21;
/// Characters of MAC output in a prefix (5 bits each).
const MAC_CHARS: usize = 20;
const BASE32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";
/// Domain separation of the HMAC input.
const CONTEXT: &[u8] = b"searchgate/tenancy/prefix/v1\0";

/// The node secret prefixes are derived from. Must be the same on every edge node in front
/// of one upstream, and must never change (indices would be orphaned).
#[derive(Clone)]
pub struct TenancyKey(hmac::Key, [u8; 32]);

impl TenancyKey {
    /// A key from 32 secret bytes (e.g. read from the data dir).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        TenancyKey(hmac::Key::new(hmac::HMAC_SHA256, &bytes), bytes)
    }

    /// A fresh random key (store its [`TenancyKey::to_bytes`] before using it).
    pub fn generate() -> Self {
        Self::from_bytes(rand::random())
    }

    /// The secret bytes, for storing.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.1
    }

    /// A 32-byte subkey for one purpose (`context` separates purposes), so that no
    /// other use of the node secret ever shares a key with the prefixes.
    pub fn subkey(&self, context: &[u8]) -> [u8; 32] {
        let tag = hmac::sign(&self.0, context);
        let mut out = [0; 32];
        out.copy_from_slice(tag.as_ref());
        out
    }
}

impl fmt::Debug for TenancyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TenancyKey(***)")
    }
}

/// The opaque prefix of one multitenant cluster's index names.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix([u8; PREFIX_LEN]);

impl Prefix {
    /// The prefix of `cluster_id` under `key`.
    pub fn derive(key: &TenancyKey, cluster_id: &str) -> Prefix {
        let mut ctx = hmac::Context::with_key(&key.0);
        ctx.update(CONTEXT);
        ctx.update(cluster_id.as_bytes());
        let tag = ctx.sign();
        let mac = tag.as_ref();
        let mut p = [b'-'; PREFIX_LEN];
        // 20 characters of 5 bits from the first 13 bytes (100 of 104 bits).
        let mut acc: u128 = 0;
        for &b in &mac[..13] {
            acc = acc << 8 | u128::from(b);
        }
        for (i, c) in p[..MAC_CHARS].iter_mut().enumerate() {
            let shift = 104 - 5 * (i + 1);
            *c = BASE32[((acc >> shift) & 31) as usize];
        }
        Prefix(p)
    }

    /// A prefix from its bytes, when they have the prefix shape (for tests and tools).
    pub fn from_bytes(b: &[u8]) -> Option<Prefix> {
        let ok = b.len() == PREFIX_LEN
            && b[..MAC_CHARS].iter().all(|c| BASE32.contains(c))
            && b[MAC_CHARS] == b'-';
        ok.then(|| {
            let mut p = [0; PREFIX_LEN];
            p.copy_from_slice(b);
            Prefix(p)
        })
    }

    /// The prefix bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The prefix as text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("base32 and '-' are ASCII")
    }

    /// Appends `input` to `out` with every occurrence of the prefix removed (for header
    /// values such as `Location` and `Warning`).
    pub fn strip_into(&self, input: &[u8], out: &mut Vec<u8>) {
        let mut last = 0;
        for m in memmem::find_iter(input, &self.0) {
            if m >= last {
                out.extend_from_slice(&input[last..m]);
                last = m + PREFIX_LEN;
            }
        }
        out.extend_from_slice(&input[last..]);
    }
}

impl fmt::Debug for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Prefix({})", self.as_str())
    }
}

/// Removes every occurrence of a prefix from a byte stream fed in chunks of any size.
/// Holds back at most `PREFIX_LEN - 1` bytes (a possible start of the prefix) between calls.
#[derive(Debug)]
pub struct Stripper {
    prefix: Prefix,
    finder: memmem::Finder<'static>,
    /// A proper prefix of the prefix, held back from the end of the last chunk.
    carry: Vec<u8>,
    /// Strips nothing ([`Stripper::none`]).
    off: bool,
}

impl Stripper {
    pub fn new(prefix: Prefix) -> Self {
        Stripper {
            prefix,
            finder: memmem::Finder::new(&prefix.0).into_owned(),
            carry: Vec::with_capacity(PREFIX_LEN),
            off: false,
        }
    }

    /// A stripper that passes every byte (the single-tenant class has no prefix; its keys'
    /// responses go through the id filter only: `key_ids`).
    pub fn none() -> Self {
        Stripper {
            prefix: Prefix([b'-'; PREFIX_LEN]),
            finder: memmem::Finder::new(&[]).into_owned(),
            carry: Vec::new(),
            off: true,
        }
    }

    /// Whether `hay` contains the prefix.
    pub fn contains(&self, hay: &[u8]) -> bool {
        !self.off && self.finder.find(hay).is_some()
    }

    /// Strips `input`, appending the output to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        if self.off {
            out.extend_from_slice(input);
            return;
        }
        let p = &self.prefix.0;
        let mut i = 0;
        while !self.carry.is_empty() {
            let c = self.carry.len();
            let avail = (PREFIX_LEN - c).min(input.len() - i);
            if p[c..c + avail] == input[i..i + avail] {
                if c + avail == PREFIX_LEN {
                    self.carry.clear();
                    i += avail;
                } else {
                    self.carry.extend_from_slice(&input[i..]);
                    return;
                }
            } else {
                // The held bytes do not start the prefix: release them one at a time until
                // what is left is again a start of the prefix.
                out.push(self.carry[0]);
                self.carry.remove(0);
                while !self.carry.is_empty() && !p.starts_with(&self.carry) {
                    out.push(self.carry[0]);
                    self.carry.remove(0);
                }
            }
        }
        let rest = &input[i..];
        let mut last = 0;
        for m in self.finder.find_iter(rest) {
            out.extend_from_slice(&rest[last..m]);
            last = m + PREFIX_LEN;
        }
        let tail = &rest[last..];
        let keep = longest_suffix_prefix(tail, p);
        out.extend_from_slice(&tail[..tail.len() - keep]);
        self.carry.extend_from_slice(&tail[tail.len() - keep..]);
    }

    /// Releases the held-back bytes at the end of the stream.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.carry);
    }
}

/// Length of the longest suffix of `hay` that is a proper prefix of `p`.
fn longest_suffix_prefix(hay: &[u8], p: &[u8]) -> usize {
    let max = (p.len() - 1).min(hay.len());
    (1..=max)
        .rev()
        .find(|&k| hay[hay.len() - k..] == p[..k])
        .unwrap_or(0)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn key(n: u8) -> TenancyKey {
        TenancyKey::from_bytes([n; 32])
    }

    #[test]
    fn prefixes_are_fixed_length_lowercase_and_stable() {
        let a = Prefix::derive(&key(1), "acme");
        assert_eq!(a, Prefix::derive(&key(1), "acme"));
        assert_eq!(a.as_bytes().len(), PREFIX_LEN);
        assert!(a
            .as_str()
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
        assert!(a.as_str().ends_with('-'));
        assert!(!a.as_str().starts_with(['_', '-', '+']));
        assert_ne!(a, Prefix::derive(&key(1), "acme2"));
        assert_ne!(a, Prefix::derive(&key(2), "acme"));
        assert_eq!(Prefix::from_bytes(a.as_bytes()), Some(a));
        assert_eq!(Prefix::from_bytes(b"short"), None);
        assert!(!format!("{:?}", key(1)).contains('1'));
    }

    #[test]
    fn no_collisions_among_many_clusters() {
        let k = key(7);
        let mut seen = std::collections::HashSet::new();
        for i in 0..20_000 {
            assert!(seen.insert(Prefix::derive(&k, &format!("c{i}"))));
        }
    }

    /// `chunks` fed through one stripper, in order (also for `stream_props_tests`).
    pub(in crate::tenancy) fn strip_stream(p: Prefix, chunks: &[&[u8]]) -> Vec<u8> {
        let mut s = Stripper::new(p);
        let mut out = Vec::new();
        for c in chunks {
            s.feed(c, &mut out);
        }
        s.finish(&mut out);
        out
    }

    #[test]
    fn stripping_at_every_split_point_equals_one_shot() {
        let p = Prefix::derive(&key(3), "t");
        let ps = p.as_str();
        let half = &ps[..10];
        let inputs = [
            format!("{{\"_index\":\"{ps}books\",\"x\":\"{ps}{ps}\"}}"),
            format!("{half}{ps}{half}"),
            ps.to_string(),
            half.to_string(),
            format!("a{half}b{ps}"),
            String::new(),
            format!("no prefix here at all, not even {}", &ps[1..]),
        ];
        for input in &inputs {
            let mut want = Vec::new();
            p.strip_into(input.as_bytes(), &mut want);
            assert!(
                !want.windows(PREFIX_LEN).any(|w| w == p.as_bytes())
                    || input.contains(&ps.repeat(2))
            );
            let b = input.as_bytes();
            for i in 0..=b.len() {
                assert_eq!(strip_stream(p, &[&b[..i], &b[i..]]), want, "{input} at {i}");
                for j in i..=b.len() {
                    assert_eq!(strip_stream(p, &[&b[..i], &b[i..j], &b[j..]]), want);
                }
            }
            let bytes: Vec<&[u8]> = b.chunks(1).collect();
            assert_eq!(strip_stream(p, &bytes), want);
        }
    }

    #[test]
    fn self_overlapping_pattern_streams_like_one_shot() {
        // A pattern that overlaps itself exercises the release loop of the carry.
        let p = Prefix::from_bytes(b"aaaaaaaaaaaaaaaaaaaa-").unwrap();
        for input in [
            "aaaaaaaaaaaaaaaaaaaaaa-x",
            "aaaaaaaaaaaaaaaaaaaa-aaaaaaaaaaaaaaaaaaaa-",
            "aaaab-",
        ] {
            let mut want = Vec::new();
            p.strip_into(input.as_bytes(), &mut want);
            let b = input.as_bytes();
            for i in 0..=b.len() {
                for j in i..=b.len() {
                    assert_eq!(
                        strip_stream(p, &[&b[..i], &b[i..j], &b[j..]]),
                        want,
                        "{input} {i} {j}"
                    );
                }
            }
        }
    }
}
