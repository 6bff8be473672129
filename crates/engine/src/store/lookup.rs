//! Finding documents by id: the id filter (a set of 64-bit id hashes with no false
//! negatives, so a new id costs no index lookup and no delete) and `_id` lookups in a
//! searcher (version, seq_no, source).

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use tantivy::schema::{IndexRecordOption, Value as _};
use tantivy::{DocAddress, DocSet, Searcher, TantivyDocument, Term, TERMINATED};

use super::schema::{Fields, F_SEQ_NO, F_VERSION};
use crate::error::EngineResult;

/// Identity hasher for the id filter (keys are hashes already).
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub(super) type IdFilter = HashSet<u64, BuildHasherDefault<IdHasher>>;

/// 64-bit FNV-1a of an id, finalised with a multiply-xorshift (the id filter's key).
pub fn id_hash(id: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in id {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

pub(super) fn build_id_filter(searcher: &Searcher, f: &Fields) -> EngineResult<IdFilter> {
    let mut ids = IdFilter::default();
    ids.reserve(searcher.num_docs() as usize);
    for seg in searcher.segment_readers() {
        let inv = seg.inverted_index(f.id)?;
        let mut stream = inv.terms().stream()?;
        while stream.advance() {
            ids.insert(id_hash(stream.key()));
        }
    }
    Ok(ids)
}

/// Finds the live document with `id` in `searcher`: (address, version, seq_no).
pub fn find_id(
    searcher: &Searcher,
    f: &Fields,
    id: &str,
) -> EngineResult<Option<(DocAddress, u64, i64)>> {
    let term = Term::from_field_text(f.id, id);
    for (ord, seg) in searcher.segment_readers().iter().enumerate() {
        let inv = seg.inverted_index(f.id)?;
        let Some(mut postings) = inv.read_postings(&term, IndexRecordOption::Basic)? else {
            continue;
        };
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if seg.alive_bitset().is_none_or(|a| a.is_alive(doc)) {
                let ff = seg.fast_fields();
                let version = ff.u64(F_VERSION)?.first(doc).unwrap_or(1);
                let seq = ff.u64(F_SEQ_NO)?.first(doc).unwrap_or(0) as i64;
                return Ok(Some((DocAddress::new(ord as u32, doc), version, seq)));
            }
            doc = postings.advance();
        }
    }
    Ok(None)
}

/// The `_routing` value stored with a document, if any.
pub fn routing_in(doc: &TantivyDocument, f: &Fields) -> Option<String> {
    doc.get_first(f.routing?)
        .and_then(|v| v.as_str())
        .map(String::from)
}

/// Reads the `_source` bytes and `_routing` of a hit.
pub fn stored_of(
    searcher: &Searcher,
    f: &Fields,
    addr: DocAddress,
) -> EngineResult<(Vec<u8>, Option<String>)> {
    let doc: TantivyDocument = searcher.doc(addr)?;
    let source = doc
        .get_first(f.source)
        .and_then(|v| v.as_bytes())
        .map(<[u8]>::to_vec)
        .unwrap_or_default();
    Ok((source, routing_in(&doc, f)))
}

/// Reads the `_source` bytes of a hit.
pub fn source_of(searcher: &Searcher, f: &Fields, addr: DocAddress) -> EngineResult<Vec<u8>> {
    let doc: TantivyDocument = searcher.doc(addr)?;
    Ok(doc
        .get_first(f.source)
        .and_then(|v| v.as_bytes())
        .map(<[u8]>::to_vec)
        .unwrap_or_default())
}
