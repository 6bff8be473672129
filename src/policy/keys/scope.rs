//! A key's index patterns against names and paths: `*` matching in linear time, whether an
//! expression item is contained in a pattern, and the path's index expression confined to
//! the patterns (wider items replaced by the patterns they contain; templates refused).
//!
//! Must not touch: roles (`keys`), bodies (`body`), credentials, sockets.

use std::borrow::Cow;

use crate::proto::Method;
use crate::request::classify::{Classified, Route, Seg, Tenancy};
use crate::request::path::encode_segment;

use super::{action_of, outside, Denied, UNSCOPED};

/// Whether `name` (no wildcard) matches `pattern` (`*` matches any run of characters).
///
/// Linear in `name` for every pattern: the text before the first `*` must start the name,
/// the text after the last `*` must end it, and each literal run between stars is found
/// leftmost in what is left (for `*`-only patterns the leftmost choice is never worse).
/// The recursive form tried every split at every `*`: a key pattern `*a*a…*b` against a
/// 60-byte name held a worker for good (attack: `tests/it/attack_keys.rs`).
pub fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    let (Some(first), Some(last)) = (
        memchr::memchr(b'*', pattern),
        memchr::memrchr(b'*', pattern),
    ) else {
        return pattern == name;
    };
    let (head, tail) = (&pattern[..first], &pattern[last + 1..]);
    if name.len() < head.len() + tail.len() || !name.starts_with(head) || !name.ends_with(tail) {
        return false;
    }
    let mut rest = &name[head.len()..name.len() - tail.len()];
    // Between the first and the last star (nothing when they are one).
    let middle = pattern.get(first + 1..last).unwrap_or_default();
    for run in middle.split(|&b| b == b'*') {
        if run.is_empty() {
            continue;
        }
        match memchr::memmem::find(rest, run) {
            Some(i) => rest = &rest[i + run.len()..],
            None => return false,
        }
    }
    true
}

/// Whether every index name the expression item `item` can match is matched by
/// `pattern`: a plain name matched by it, the pattern itself, or (for a pattern
/// `<prefix>*` with no other wildcard) a wildcard item whose text before its first `*`
/// starts with the prefix.
pub fn contained(item: &[u8], pattern: &[u8]) -> bool {
    if item == pattern {
        return true;
    }
    let Some(star) = item.iter().position(|&b| b == b'*') else {
        return glob_match(pattern, item);
    };
    match pattern.split_last() {
        Some((b'*', prefix)) if !prefix.contains(&b'*') => item[..star].starts_with(prefix),
        _ => false,
    }
}

/// Characters an index expression item may not contain for a key limited to patterns:
/// date math (`<`), remote clusters (`:`).
pub(super) fn opaque(item: &[u8]) -> bool {
    item.iter().any(|&b| matches!(b, b'<' | b'>' | b':' | b'{'))
}

/// The index expression `expr` (comma list, wildcards, `_all`) confined to `patterns`:
/// items within a pattern are kept, wider items are replaced by the patterns they contain;
/// an item that is neither is refused (its text in the error). Exclusions (`-name`) stay.
pub fn confine(expr: &[u8], patterns: &[String]) -> Result<Vec<u8>, String> {
    let mut out: Vec<u8> = Vec::with_capacity(expr.len());
    let push = |out: &mut Vec<u8>, item: &[u8]| {
        let dup = out.split(|&b| b == b',').any(|x| x == item);
        if !dup {
            if !out.is_empty() {
                out.push(b',');
            }
            out.extend_from_slice(item);
        }
    };
    for item in expr.split(|&b| b == b',') {
        let item: &[u8] = if item == b"_all" || item.is_empty() {
            b"*"
        } else {
            item
        };
        if item.starts_with(b"-") && !out.is_empty() {
            push(&mut out, item);
            continue;
        }
        if opaque(item) {
            return Err(String::from_utf8_lossy(item).into_owned());
        }
        if patterns.iter().any(|p| contained(item, p.as_bytes())) {
            push(&mut out, item);
            continue;
        }
        let inner: Vec<&String> = patterns
            .iter()
            .filter(|p| item.contains(&b'*') && contained(p.as_bytes(), item))
            .collect();
        if inner.is_empty() {
            return Err(String::from_utf8_lossy(item).into_owned());
        }
        for p in inner {
            push(&mut out, p.as_bytes());
        }
    }
    Ok(out)
}

/// For a key limited to `patterns` (non-empty): the path to classify again instead of the
/// request's, with its index expression confined (`Ok(None)`: the path stays as it is).
pub fn scope_path(
    patterns: &[String],
    method: Method,
    c: &Classified<'_>,
) -> Result<Option<Vec<u8>>, Denied> {
    let Some(route) = c.route else {
        return Err(Denied {
            action: action_of(method, c),
            why: Cow::Borrowed("a key limited to indices may call known endpoints only"),
        });
    };
    if TEMPLATES.contains(&route.name) {
        return Err(Denied {
            action: action_of(method, c),
            why: Cow::Borrowed(TEMPLATE_WHY),
        });
    }
    let at = index_positions(route);
    let insert = match route.tenancy {
        Tenancy::Rewrite { all_at, .. } if at.is_empty() => all_at,
        _ => None,
    };
    if at.is_empty() && insert.is_none() {
        return if UNSCOPED.contains(&route.name) {
            Ok(None)
        } else {
            Err(Denied {
                action: action_of(method, c),
                why: Cow::Borrowed("it reaches beyond the key's indices"),
            })
        };
    }
    let mut segs: Vec<Vec<u8>> = c.path.segments().map(<[u8]>::to_vec).collect();
    for &i in &at {
        if let Some(seg) = segs.get_mut(i) {
            *seg = confine(seg, patterns).map_err(|n| outside(action_of(method, c), &n))?;
        }
    }
    if let Some(i) = insert {
        let all = confine(b"*", patterns).map_err(|n| outside(action_of(method, c), &n))?;
        segs.insert((i as usize).min(segs.len()), all);
    }
    let mut out = Vec::with_capacity(c.path.len() * 16 + 16);
    if segs.is_empty() {
        out.push(b'/');
    }
    for s in &segs {
        out.push(b'/');
        encode_segment(s, &mut out);
    }
    Ok(Some(out))
}

/// Endpoints of cluster-level configuration whose path names (templates) are not index
/// names: a key limited to indices neither reads nor writes them (a template named
/// `site-t` can hold settings, mappings and aliases of `secret*`; its name says nothing of
/// what its body reaches, and reading it back would show the master's configuration).
const TEMPLATES: &[&str] = &["_template", "_index_template", "_component_template"];

const TEMPLATE_WHY: &str = "templates are cluster-level configuration, beyond a key limited to indices (their names are not index names)";

/// Whether [`scope_path`] puts a key's patterns into the path of `c` (it names no index
/// and its endpoint reads all of them then).
pub fn inserts_patterns(c: &Classified<'_>) -> bool {
    c.route.is_some_and(|route| {
        index_positions(route).is_empty()
            && matches!(
                route.tenancy,
                Tenancy::Rewrite {
                    all_at: Some(_),
                    ..
                }
            )
    })
}

/// Positions of the path segments a row reads as index or alias names.
fn index_positions(route: &Route) -> Vec<usize> {
    route
        .pattern
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Seg::Index | Seg::Alias))
        .map(|(i, _)| i)
        .collect()
}
