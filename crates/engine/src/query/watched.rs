//! A compiled query whose documents are counted as work ([`crate::cancel::tick`]): its
//! weight and scorers tick once per document or block they give out, so the search of a
//! request whose client went away stops within moments, whatever the query or collector
//! (hits, counts, aggregations, sorting). Wraps the top of each compiled query only.
//!
//! Must not touch: what the query matches or how it scores (everything is delegated).

use tantivy::query::{EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, Term};

use crate::cancel::tick;

/// `q`, watched.
pub fn watch(q: Box<dyn Query>) -> Box<dyn Query> {
    Box::new(Watched(q))
}

#[derive(Debug)]
struct Watched(Box<dyn Query>);

impl Clone for Watched {
    fn clone(&self) -> Self {
        Watched(self.0.box_clone())
    }
}

impl Query for Watched {
    fn weight(&self, enable: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(WatchedWeight(self.0.weight(enable)?)))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        self.0.query_terms(visitor)
    }
}

struct WatchedWeight(Box<dyn Weight>);

impl Weight for WatchedWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(Box::new(WatchedScorer(self.0.scorer(reader, boost)?)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.0.explain(reader, doc)
    }

    fn count(&self, reader: &SegmentReader) -> tantivy::Result<u32> {
        tick();
        self.0.count(reader)
    }

    fn for_each(
        &self,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score),
    ) -> tantivy::Result<()> {
        self.0.for_each(reader, &mut |d, s| {
            tick();
            callback(d, s)
        })
    }

    fn for_each_no_score(
        &self,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(&[DocId]),
    ) -> tantivy::Result<()> {
        self.0.for_each_no_score(reader, &mut |docs| {
            tick();
            callback(docs)
        })
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        self.0.for_each_pruning(threshold, reader, &mut |d, s| {
            tick();
            callback(d, s)
        })
    }
}

struct WatchedScorer(Box<dyn Scorer>);

impl DocSet for WatchedScorer {
    fn advance(&mut self) -> DocId {
        tick();
        self.0.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        tick();
        self.0.seek(target)
    }

    fn doc(&self) -> DocId {
        self.0.doc()
    }

    fn size_hint(&self) -> u32 {
        self.0.size_hint()
    }

    fn cost(&self) -> u64 {
        self.0.cost()
    }
}

impl Scorer for WatchedScorer {
    fn score(&mut self) -> Score {
        self.0.score()
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    use tantivy::collector::{Count, TopDocs};
    use tantivy::query::AllQuery;
    use tantivy::schema::{Schema, STORED, TEXT};
    use tantivy::{doc, Index};

    use super::*;
    use crate::cancel::{watching, Cancelled};

    fn index(docs: usize) -> Index {
        let mut b = Schema::builder();
        let f = b.add_text_field("t", TEXT | STORED);
        let index = Index::create_in_ram(b.build());
        let mut w = index.writer(15_000_000).unwrap();
        for i in 0..docs {
            w.add_document(doc!(f => format!("w{}", i % 7))).unwrap();
        }
        w.commit().unwrap();
        index
    }

    // A search whose client is there runs as unwatched; one whose client is gone stops,
    // whichever collector drives it (top hits by score, a count).
    #[test]
    fn a_search_stops_when_its_client_is_gone() {
        let searcher = index(20_000).reader().unwrap().searcher();
        let q = watch(Box::new(AllQuery));
        let here = watching(Box::new(|| false), || {
            searcher.search(&*q, &(Count, TopDocs::with_limit(3).order_by_score()))
        });
        assert_eq!(here.unwrap().0, 20_000);
        for by_count in [true, false] {
            let stopped = catch_unwind(AssertUnwindSafe(|| {
                watching(Box::new(|| true), || loop {
                    // until the first look, 20 ms on: each pass ticks 20,000 times
                    if by_count {
                        let _ = searcher.search(&*q, &Count);
                    } else {
                        let _ = searcher.search(&*q, &TopDocs::with_limit(3).order_by_score());
                    }
                })
            }));
            assert!(stopped.unwrap_err().is::<Cancelled>());
        }
    }
}
