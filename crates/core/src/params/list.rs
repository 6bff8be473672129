//! Comma lists (index lists, field lists) as Elasticsearch 7.10 splits them:
//! `Strings.splitStringByCommaToArray`, that is Java's `String.split(",")`: empty parts
//! in the middle are kept, trailing empty parts are dropped, and an empty value (or one
//! of commas only) is an empty list. Parts are not trimmed.
//!
//! Must not touch: what a part means (index names are `tenancy`'s and the engine's).

/// The parts of `value`, as Elasticsearch splits it.
pub fn split_commas(value: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = value.split(',').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// The canonical form of a list: its parts joined with commas (what Elasticsearch reads
/// back as the same parts).
pub fn join_commas(parts: &[&str]) -> String {
    parts.join(",")
}
