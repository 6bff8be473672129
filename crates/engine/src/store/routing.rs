//! Document routing: which primary shard holds an id, computed as Elasticsearch 7 does
//! (murmur3 x86_32 of the routing value's UTF-16 code units, modulo the routing shards).
//!
//! Pure functions.

/// MurmurHash3 x86_32 with seed 0.
pub fn murmur3_32(data: &[u8]) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h: u32 = 0;
    let chunks = data.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let mut k: u32 = 0;
    for (i, &b) in tail.iter().enumerate() {
        k |= (b as u32) << (8 * i);
    }
    if !tail.is_empty() {
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// `index.number_of_routing_shards` default of Elasticsearch 7 for `shards` primaries.
pub fn routing_shards(shards: u32) -> u32 {
    let log2_shards = 32 - (shards.max(1) - 1).leading_zeros();
    let splits = 10i32 - log2_shards as i32;
    let splits = splits.max(1) as u32;
    shards * (1u32 << splits.min(20))
}

/// The shard of `routing` (the id, unless a routing value was given).
pub fn shard_for(routing: &str, shards: u32) -> u16 {
    let mut bytes = Vec::with_capacity(routing.len() * 2);
    for unit in routing.encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    let hash = murmur3_32(&bytes) as i32;
    let rs = routing_shards(shards) as i32;
    let factor = rs / shards.max(1) as i32;
    (hash.rem_euclid(rs) / factor) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur_reference_vectors() {
        assert_eq!(murmur3_32(b""), 0);
        assert_eq!(murmur3_32(b"hello"), 0x248b_fa47);
        assert_eq!(murmur3_32(b"hello, world"), 0x149b_bb7f);
        assert_eq!(
            murmur3_32(b"The quick brown fox jumps over the lazy dog"),
            0x2e4f_f723
        );
    }

    #[test]
    fn routing_shards_as_elasticsearch_7() {
        assert_eq!(routing_shards(1), 1024);
        assert_eq!(routing_shards(5), 640);
        assert_eq!(routing_shards(3), 768);
    }

    #[test]
    fn shards_are_in_range_and_spread() {
        let mut counts = [0usize; 5];
        for i in 0..5000 {
            let s = shard_for(&format!("doc-{i}"), 5) as usize;
            counts[s] += 1;
        }
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
        assert_eq!(shard_for("anything", 1), 0);
    }
}
