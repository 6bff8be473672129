//! Fuzzy term expansion as Lucene's `FuzzyQuery` does it: the first `prefix_length`
//! characters must match exactly, the rest within a Levenshtein distance (with or without
//! transpositions), and at most `max_expansions` terms are kept (the most similar first,
//! then in term order), never more than [`MAX_EXPANSIONS_CAP`] (Lucene's
//! `min(maxClauseCount, maxExpansions)`, 1024): whatever a request asks, the postings read
//! are bounded.
//!
//! With a searcher (hits, counts), the expansion is chosen once over every segment and
//! becomes a disjunction of term queries boosted by similarity (`1 - d / min(len)`), as
//! Lucene's rewrite does; without one (a `filter` aggregation), each segment chooses its own
//! terms and matches with a constant score.
//!
//! Must not touch: the mapping, analysis, HTTP.

use std::collections::{BTreeSet, BinaryHeap, HashSet};
use std::sync::{Arc, OnceLock};

use levenshtein_automata::{Distance, LevenshteinAutomatonBuilder, DFA, SINK_STATE};
use tantivy::query::{
    BitSetDocSet, BooleanQuery, BoostQuery, ConstScorer, EnableScoring, Explanation, Occur, Query,
    Scorer, TermQuery, Weight,
};
use tantivy::schema::IndexRecordOption;
use tantivy::termdict::TermDictionary;
use tantivy::{BitSet, DocId, DocSet, Score, SegmentReader, Term};
use tantivy_fst::Automaton;

/// The most terms one fuzzy term expands to, whatever `max_expansions` says.
pub const MAX_EXPANSIONS_CAP: usize = 1024;

/// The options of a fuzzy term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuzzyParams {
    pub distance: u8,
    pub prefix_length: usize,
    pub max_expansions: usize,
    pub transpositions: bool,
}

/// Terms of one field within `params` of `text`. `base` is the term of the empty string in
/// that field (a plain text field, or a JSON path with its type byte): its value bytes are
/// the dictionary prefix every candidate shares.
#[derive(Debug, Clone)]
pub struct FuzzyQuery {
    base: Term,
    text: String,
    params: FuzzyParams,
}

impl FuzzyQuery {
    pub fn new(base: Term, text: &str, params: FuzzyParams) -> FuzzyQuery {
        FuzzyQuery {
            base,
            text: text.to_string(),
            params: FuzzyParams {
                distance: params.distance.min(2),
                max_expansions: params.max_expansions.clamp(1, MAX_EXPANSIONS_CAP),
                ..params
            },
        }
    }

    /// The exact prefix (dictionary prefix + the first `prefix_length` characters) and the
    /// fuzzy rest of the text.
    fn split(&self) -> (Vec<u8>, &str) {
        let cut = self
            .text
            .char_indices()
            .nth(self.params.prefix_length)
            .map_or(self.text.len(), |(i, _)| i);
        let mut lit = self.base.serialized_value_bytes().to_vec();
        lit.extend_from_slice(&self.text.as_bytes()[..cut]);
        (lit, &self.text[cut..])
    }

    fn term_of(&self, key: &[u8]) -> Term {
        let mut t = self.base.clone();
        t.truncate_value_bytes(0);
        t.append_bytes(key);
        t
    }

    /// The chosen dictionary keys with their similarity, best first.
    fn expand<'a>(
        &self,
        dicts: impl Iterator<Item = &'a TermDictionary>,
    ) -> tantivy::Result<Vec<(Vec<u8>, f32)>> {
        let (lit, rest) = self.split();
        let exact_only = self.params.distance == 0 || rest.is_empty();
        let dfa = builder(self.params.distance, self.params.transpositions).build_dfa(rest);
        let query_len = self.text.chars().count();
        let base_len = self.base.serialized_value_bytes().len();
        let mut best = TopTerms::new(self.params.max_expansions);
        for dict in dicts {
            if exact_only {
                let mut key = self.base.serialized_value_bytes().to_vec();
                key.extend_from_slice(self.text.as_bytes());
                if dict.get(&key)?.is_some() {
                    best.offer(key, 1.0);
                }
                continue;
            }
            let automaton = Prefixed {
                prefix: &lit,
                dfa: &dfa,
            };
            let mut stream = dict.search(&automaton).ge(&lit);
            if let Some(end) = prefix_end(&lit) {
                stream = stream.lt(end);
            }
            let mut stream = stream.into_stream()?;
            while stream.advance() {
                let key = stream.key();
                let Distance::Exact(d) = dfa.eval(&key[lit.len()..]) else {
                    continue;
                };
                let len = std::str::from_utf8(&key[base_len..]).map_or(0, |s| s.chars().count());
                let min = len.min(query_len).max(1) as f32;
                best.offer(key.to_vec(), (1.0 - f32::from(d) / min).max(0.0));
            }
        }
        Ok(best.into_sorted())
    }
}

fn builder(distance: u8, transpositions: bool) -> &'static LevenshteinAutomatonBuilder {
    static BUILDERS: [[OnceLock<LevenshteinAutomatonBuilder>; 2]; 3] = [
        [OnceLock::new(), OnceLock::new()],
        [OnceLock::new(), OnceLock::new()],
        [OnceLock::new(), OnceLock::new()],
    ];
    let d = distance.min(2);
    BUILDERS[d as usize][transpositions as usize]
        .get_or_init(|| LevenshteinAutomatonBuilder::new(d, transpositions))
}

/// The first key after every key starting with `p` (None: no such bound).
fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut end = p.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The literal prefix, then the Levenshtein automaton of the rest.
struct Prefixed<'a> {
    prefix: &'a [u8],
    dfa: &'a DFA,
}

impl Automaton for Prefixed<'_> {
    /// (bytes of the prefix read, DFA state once the prefix is read).
    type State = (usize, u32);

    fn start(&self) -> Self::State {
        (0, self.dfa.initial_state())
    }

    fn is_match(&self, s: &Self::State) -> bool {
        s.0 == self.prefix.len() && matches!(self.dfa.distance(s.1), Distance::Exact(_))
    }

    fn can_match(&self, s: &Self::State) -> bool {
        s.1 != SINK_STATE
    }

    fn accept(&self, s: &Self::State, byte: u8) -> Self::State {
        match self.prefix.get(s.0) {
            Some(&b) if b == byte => (s.0 + 1, s.1),
            Some(_) => (s.0, SINK_STATE),
            None => (s.0, self.dfa.transition(s.1, byte)),
        }
    }
}

/// The `n` best (similarity, then key order) distinct keys.
struct TopTerms {
    n: usize,
    heap: BinaryHeap<Ranked>,
    keys: HashSet<Vec<u8>>,
}

/// Ordered so that the heap's top is the worst kept term.
#[derive(PartialEq)]
struct Ranked(f32, Vec<u8>);

impl Eq for Ranked {}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .0
            .total_cmp(&self.0)
            .then_with(|| self.1.cmp(&other.1))
    }
}

impl TopTerms {
    fn new(n: usize) -> TopTerms {
        TopTerms {
            n,
            heap: BinaryHeap::new(),
            keys: HashSet::new(),
        }
    }

    fn offer(&mut self, key: Vec<u8>, sim: f32) {
        if self.keys.contains(&key) {
            return;
        }
        let r = Ranked(sim, key);
        if self.heap.len() == self.n {
            match self.heap.peek() {
                Some(worst) if r < *worst => {
                    let out = self.heap.pop().expect("full heap");
                    self.keys.remove(&out.1);
                }
                _ => return,
            }
        }
        self.keys.insert(r.1.clone());
        self.heap.push(r);
    }

    fn into_sorted(self) -> Vec<(Vec<u8>, f32)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|Ranked(s, k)| (k, s))
            .collect()
    }
}

impl Query for FuzzyQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let Some(searcher) = scoring.searcher() else {
            return Ok(Box::new(PerSegment(Arc::new(self.clone()))));
        };
        let field = self.base.field();
        let mut dicts = Vec::new();
        for seg in searcher.segment_readers() {
            dicts.push(seg.inverted_index(field)?);
        }
        let chosen = self.expand(dicts.iter().map(|ii| ii.terms()))?;
        let clauses: Vec<(Occur, Box<dyn Query>)> = chosen
            .iter()
            .map(|(key, sim)| {
                let tq = TermQuery::new(self.term_of(key), IndexRecordOption::WithFreqs);
                let q: Box<dyn Query> = Box::new(BoostQuery::new(Box::new(tq), *sim));
                (Occur::Should, q)
            })
            .collect();
        BooleanQuery::new(clauses).weight(scoring)
    }
}

/// Without a searcher: each segment expands on its own and matches with a constant score.
struct PerSegment(Arc<FuzzyQuery>);

impl Weight for PerSegment {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let ii = reader.inverted_index(self.0.base.field())?;
        let chosen = self.0.expand(std::iter::once(ii.terms()))?;
        let mut docs = BitSet::with_max_value(reader.max_doc());
        let keys: BTreeSet<Vec<u8>> = chosen.into_iter().map(|(k, _)| k).collect();
        for key in keys {
            let Some(info) = ii.terms().get(&key)? else {
                continue;
            };
            let mut block =
                ii.read_block_postings_from_terminfo(&info, IndexRecordOption::Basic)?;
            loop {
                let ds = block.docs();
                if ds.is_empty() {
                    break;
                }
                for &d in ds {
                    docs.insert(d);
                }
                block.advance();
            }
        }
        Ok(Box::new(ConstScorer::new(BitSetDocSet::from(docs), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut s = self.scorer(reader, 1.0)?;
        if s.seek(doc) == doc {
            Ok(Explanation::new("FuzzyQuery", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(
                "Document does not match".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::collector::{Count, TopDocs};
    use tantivy::schema::{Schema, STRING};
    use tantivy::{doc, Index, IndexWriter};

    fn index(words: &[&str]) -> (Index, tantivy::schema::Field) {
        let mut sb = Schema::builder();
        let f = sb.add_text_field("f", STRING);
        let index = Index::create_in_ram(sb.build());
        let mut w: IndexWriter = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for (i, word) in words.iter().enumerate() {
            w.add_document(doc!(f => *word)).unwrap();
            if i % 2 == 1 {
                w.commit().unwrap(); // several segments
            }
        }
        w.commit().unwrap();
        (index, f)
    }

    fn p(distance: u8, prefix_length: usize, max: usize, transpositions: bool) -> FuzzyParams {
        FuzzyParams {
            distance,
            prefix_length,
            max_expansions: max,
            transpositions,
        }
    }

    fn count(words: &[&str], text: &str, params: FuzzyParams) -> usize {
        let (index, f) = index(words);
        let s = index.reader().unwrap().searcher();
        let q = FuzzyQuery::new(Term::from_field_text(f, ""), text, params);
        let hits = s
            .search(&q, &TopDocs::with_limit(100).order_by_score())
            .unwrap()
            .len();
        // scored and unscored paths agree when the expansion is not cut
        assert_eq!(hits, s.search(&q, &Count).unwrap());
        hits
    }

    #[test]
    fn distance_and_transpositions() {
        let words = ["quick", "quack", "quikc", "slow"];
        assert_eq!(count(&words, "quick", p(1, 0, 50, true)), 3);
        // without transpositions, "quikc" is two edits away
        assert_eq!(count(&words, "quick", p(1, 0, 50, false)), 2);
        assert_eq!(count(&words, "quick", p(2, 0, 50, false)), 3);
        assert_eq!(count(&words, "quick", p(0, 0, 50, true)), 1);
    }

    #[test]
    fn prefix_length_must_match_exactly() {
        let words = ["quick", "quack", "wuick"];
        assert_eq!(count(&words, "quick", p(1, 0, 50, true)), 3);
        assert_eq!(count(&words, "quick", p(1, 1, 50, true)), 2);
        assert_eq!(count(&words, "quick", p(1, 3, 50, true)), 1);
        // a prefix as long as the text: the exact term only
        assert_eq!(count(&words, "quick", p(2, 9, 50, true)), 1);
    }

    #[test]
    fn max_expansions_keeps_the_most_similar_then_term_order() {
        let words = ["abcd", "abce", "abcf", "abcx", "bbcd"];
        let (index, f) = index(&words);
        let s = index.reader().unwrap().searcher();
        let ii: Vec<_> = s
            .segment_readers()
            .iter()
            .map(|r| r.inverted_index(f).unwrap())
            .collect();
        let q = FuzzyQuery::new(Term::from_field_text(f, ""), "abcd", p(1, 0, 2, true));
        let chosen = q.expand(ii.iter().map(|i| i.terms())).unwrap();
        let keys: Vec<&[u8]> = chosen.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(keys, vec![&b"abcd"[..], b"abce"]);
        assert_eq!(chosen[0].1, 1.0);
        assert_eq!(chosen[1].1, 0.75);
        let q = FuzzyQuery::new(Term::from_field_text(f, ""), "abcd", p(1, 0, 2, true));
        assert_eq!(s.search(&q, &Count).unwrap(), 2);
    }

    #[test]
    fn max_expansions_is_capped() {
        let q = FuzzyQuery::new(
            Term::from_field_text(tantivy::schema::Field::from_field_id(0), ""),
            "x",
            p(2, 0, usize::MAX, true),
        );
        assert_eq!(q.params.max_expansions, MAX_EXPANSIONS_CAP);
    }
}
