//! The fixed tantivy schema every shard has, the conversion of a mapped document into a
//! tantivy document, and the analyzers (tokenizer chains) behind mapping analyzers.
//!
//! Owns the names of tantivy fields. Must not touch: mappings' rules (see `mapping`), I/O.

use tantivy::schema::{
    Field, IndexRecordOption, JsonObjectOptions, OwnedValue, Schema, TextFieldIndexing,
    TextOptions, FAST, STORED, STRING,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::TantivyDocument;

use crate::mapping::{Analyzer, IndexedDoc, KwValue, Mapping, TEXT_SLOTS};

/// `_id`: raw, indexed, stored.
pub const F_ID: &str = "_id";
/// `_source`: the original JSON bytes, stored.
pub const F_SOURCE: &str = "_source";
/// `_routing`: the routing value a document was written with, raw, indexed, stored.
/// Shards created before it existed lack it (their documents show no `_routing`).
pub const F_ROUTING: &str = "_routing";
/// `_version`: fast.
pub const F_VERSION: &str = "_version";
/// `_seq_no`: fast.
pub const F_SEQ_NO: &str = "_seq_no";
/// `_field_names`: paths holding a value, raw, indexed (for `exists`).
pub const F_NAMES: &str = "_field_names";
/// Keywords, numbers, dates (epoch ms) and booleans by path: JSON, raw, indexed, fast.
pub const F_KW: &str = "k";
/// Text of fields without a slot, by path: JSON, analyzed with positions.
pub const F_TEXT: &str = "t";

/// Handles of the shard schema's fields.
#[derive(Debug, Clone)]
pub struct Fields {
    pub id: Field,
    pub source: Field,
    /// None in shards created before `_routing` was stored.
    pub routing: Option<Field>,
    pub version: Field,
    pub seq_no: Field,
    pub names: Field,
    pub kw: Field,
    pub text: Field,
    pub slots: Vec<Field>,
}

/// The name of slot `n`'s field and tokenizer.
pub fn slot_name(n: u8) -> String {
    format!("s{n}")
}

/// Builds the shard schema.
pub fn build_schema() -> Schema {
    let mut b = Schema::builder();
    b.add_text_field(F_ID, STRING | STORED);
    b.add_bytes_field(F_SOURCE, STORED);
    b.add_text_field(F_ROUTING, STRING | STORED);
    b.add_u64_field(F_VERSION, FAST);
    b.add_u64_field(F_SEQ_NO, FAST);
    b.add_text_field(F_NAMES, STRING);
    let kw_indexing = TextFieldIndexing::default()
        .set_tokenizer("raw")
        .set_fieldnorms(false)
        .set_index_option(IndexRecordOption::WithFreqs);
    b.add_json_field(
        F_KW,
        JsonObjectOptions::default()
            .set_indexing_options(kw_indexing)
            .set_fast("raw")
            .set_expand_dots_enabled(),
    );
    let text_indexing = TextFieldIndexing::default()
        .set_tokenizer("default")
        .set_index_option(IndexRecordOption::WithFreqsAndPositions);
    b.add_json_field(
        F_TEXT,
        JsonObjectOptions::default()
            .set_indexing_options(text_indexing)
            .set_expand_dots_enabled(),
    );
    for n in 0..TEXT_SLOTS {
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(&slot_name(n))
            .set_index_option(IndexRecordOption::WithFreqsAndPositions);
        b.add_text_field(
            &slot_name(n),
            TextOptions::default().set_indexing_options(indexing),
        );
    }
    b.build()
}

/// Looks the fields up in a schema built by [`build_schema`].
pub fn fields(schema: &Schema) -> tantivy::Result<Fields> {
    let get = |n: &str| schema.get_field(n);
    Ok(Fields {
        id: get(F_ID)?,
        source: get(F_SOURCE)?,
        routing: get(F_ROUTING).ok(),
        version: get(F_VERSION)?,
        seq_no: get(F_SEQ_NO)?,
        names: get(F_NAMES)?,
        kw: get(F_KW)?,
        text: get(F_TEXT)?,
        slots: (0..TEXT_SLOTS)
            .map(|n| get(&slot_name(n)))
            .collect::<tantivy::Result<_>>()?,
    })
}

/// The tokenizer chain of a mapping analyzer.
pub fn analyzer(a: &Analyzer) -> TextAnalyzer {
    a.text_analyzer()
}

/// Registers the analyzers of `mapping` on `index`: the shared text field uses `standard`,
/// each slot the analyzer of the path it holds.
pub fn register_tokenizers(index: &tantivy::Index, mapping: &Mapping) {
    let tm = index.tokenizers();
    tm.register("default", analyzer(&Analyzer::Standard));
    let mut per_slot = vec![Analyzer::Standard; TEXT_SLOTS as usize];
    for (_, f) in mapping.fields() {
        if let Some(s) = f.slot {
            per_slot[s as usize] = f.analyzer.clone();
        }
    }
    for (n, a) in per_slot.into_iter().enumerate() {
        tm.register(&slot_name(n as u8), analyzer(&a));
    }
}

/// Everything stored for one document version.
#[derive(Debug)]
pub struct DocRecord<'a> {
    pub id: &'a str,
    pub source: &'a [u8],
    pub version: u64,
    pub seq_no: i64,
    pub doc: &'a IndexedDoc,
}

/// Builds the tantivy document of `rec`.
pub fn to_tantivy(f: &Fields, rec: &DocRecord<'_>) -> TantivyDocument {
    let mut d = TantivyDocument::new();
    d.add_text(f.id, rec.id);
    d.add_bytes(f.source, rec.source);
    if let (Some(field), Some(r)) = (f.routing, &rec.doc.routing) {
        d.add_text(field, r);
    }
    d.add_u64(f.version, rec.version);
    d.add_u64(f.seq_no, rec.seq_no.max(0) as u64);
    for name in &rec.doc.field_names {
        d.add_text(f.names, name);
    }
    if !rec.doc.keywords.is_empty() {
        let entries = group(rec.doc.keywords.iter().map(|(p, v)| (p, kw_value(v))));
        d.add_field_value(f.kw, &OwnedValue::Object(entries));
    }
    if !rec.doc.texts.is_empty() {
        let entries = group(
            rec.doc
                .texts
                .iter()
                .map(|(p, t)| (p, OwnedValue::Str(t.clone()))),
        );
        d.add_field_value(f.text, &OwnedValue::Object(entries));
    }
    for (slot, text) in &rec.doc.slot_texts {
        d.add_text(f.slots[*slot as usize], text);
    }
    d
}

fn kw_value(v: &KwValue) -> OwnedValue {
    match v {
        KwValue::Str(s) => OwnedValue::Str(s.clone()),
        KwValue::I64(i) => OwnedValue::I64(*i),
        KwValue::F64(x) => OwnedValue::F64(*x),
        KwValue::Bool(b) => OwnedValue::Bool(*b),
    }
}

/// Groups repeated paths into arrays, keeping first-seen order.
fn group<'a>(items: impl Iterator<Item = (&'a String, OwnedValue)>) -> Vec<(String, OwnedValue)> {
    let mut out: Vec<(String, OwnedValue)> = Vec::new();
    for (path, value) in items {
        match out.iter_mut().find(|(p, _)| p == path) {
            None => out.push((path.clone(), value)),
            Some((_, OwnedValue::Array(arr))) => arr.push(value),
            Some((_, slot)) => {
                let first = std::mem::replace(slot, OwnedValue::Null);
                *slot = OwnedValue::Array(vec![first, value]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_has_every_field() {
        let s = build_schema();
        let f = fields(&s).unwrap();
        assert_eq!(f.slots.len(), TEXT_SLOTS as usize);
        assert_ne!(f.kw, f.text);
    }

    #[test]
    fn repeated_paths_become_arrays() {
        let a = "a".to_string();
        let b = "b".to_string();
        let g = group(
            vec![
                (&a, OwnedValue::I64(1)),
                (&b, OwnedValue::I64(2)),
                (&a, OwnedValue::I64(3)),
                (&a, OwnedValue::I64(4)),
            ]
            .into_iter(),
        );
        assert_eq!(g.len(), 2);
        assert_eq!(
            g[0].1,
            OwnedValue::Array(vec![
                OwnedValue::I64(1),
                OwnedValue::I64(3),
                OwnedValue::I64(4)
            ])
        );
    }

    #[test]
    fn standard_analyzer_lowercases_and_splits() {
        let mut a = analyzer(&Analyzer::Standard);
        let mut toks = Vec::new();
        a.token_stream("Hello, World-42")
            .process(&mut |t| toks.push(t.text.clone()));
        assert_eq!(toks, vec!["hello", "world", "42"]);
    }
}
