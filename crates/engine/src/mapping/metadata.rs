//! The names of Elasticsearch's metadata fields, which no document or mapping may define
//! at its root.
//!
//! Must not touch: parsing, storage.

/// Elasticsearch 7.10's built-in metadata fields (`IndicesModule`'s metadata mappers). None
/// of them may be a root field of a document or a root property of a mapping: queries give
/// `_id` and `_index` a meaning of their own, so a mapped field of that name would let a
/// field pattern (`_ind*`, the default `*` of `query_string`) reach the index name.
pub const METADATA_FIELDS: &[&str] = &[
    "_id",
    "_index",
    "_routing",
    "_source",
    "_type",
    "_version",
    "_seq_no",
    "_field_names",
    "_ignored",
    "_data_stream_timestamp",
];

/// Whether `path` is a metadata field, or lies under one (`_index.x`).
pub fn under_metadata(path: &str) -> bool {
    let root = path.split('.').next().unwrap_or(path);
    METADATA_FIELDS.contains(&root)
}
