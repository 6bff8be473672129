//! Scroll and point-in-time ids of a cluster's keys on the single-tenant class.
//!
//! The single-tenant class forwards its master pair's traffic as it comes: the master gets
//! the engine's own ids and sends them back. A key must not continue, search with or close
//! a context it did not open (issue 29: a key limited to `site*` holding the master's scroll
//! over `secret` would read `secret`), so for a key's request the edge holds the line the
//! multitenant class holds (`ids`): every id a response hands the key is sealed, bound to
//! the cluster and the key ([`super::ids::binding`]); every id the key sends must be such a
//! token, which the edge opens before forwarding. A raw engine id, another key's token, the
//! master's id or a tampered token opens to nothing and is answered as Elasticsearch answers
//! a context that is not the caller's (its security layer answers another user's scroll id
//! with 404 `search_context_missing_exception`, so an id's existence is not told either).
//! A sealed token opens on any edge node of the fleet (the node secret is the fleet's), and
//! the edge keeps no table.
//!
//! Where a key's request can carry an id, and what is done there (one reading: what the
//! edge reads is re-serialised, what it cannot read is refused):
//!
//! | where | what |
//! |---|---|
//! | path `/_search/scroll/<ids>` | each comma item opened |
//! | query `scroll_id` (name decoded) | opened; twice: 400 |
//! | query `source` (a body in the query string) | 400: the edge would not read it |
//! | scroll and clear-scroll bodies `scroll_id` (string or list) | opened |
//! | `DELETE /_pit` body `id`, OpenSearch's close body `pit_id` | opened |
//! | search bodies: top-level `pit.id` | opened |
//! | `_msearch` lines: a top-level `pit` | 400 (its responses' ids are nested, unsealed) |
//! | a body the strict parser cannot read (comments, duplicate keys) | 400 |
//! | endpoints the edge does not know (templates, SQL cursors...) | 403 for a restricted key (`policy::keys`) |
//!
//! Responses: top-level `_scroll_id` and `pit_id` of searches and scrolls, `id`/`pit_id` of
//! an opening, and every `pit_id` of OpenSearch's close answer, sealed (the response filter
//! of `ids`, without a prefix to strip). Listing every point in time of the engine is
//! refused to keys (`policy::keys`: the edge cannot tell which are the key's).
//!
//! Must not touch: I/O, the registry, the master pair's traffic (never read here).

use super::ids::{IdFields, IdKind, IdSealer};
use super::json::{self, Value};
use super::refusals::{illegal, parsing};
use crate::errors::EdgeError;
use crate::request::classify::{BodyKind, Classified, ResponseKind, Seg, Tenancy};
use crate::request::path::encode_segment;

/// The means to open a key's tokens: the node's sealer (`None`: none opens) and the
/// key's binding.
#[derive(Debug, Clone, Copy)]
pub struct KeyIds<'a> {
    pub sealer: Option<&'a IdSealer>,
    pub binding: &'a str,
}

impl KeyIds<'_> {
    /// The engine id inside `token`, or 404 as for a missing context.
    pub fn open(&self, kind: IdKind, token: &str) -> Result<String, EdgeError> {
        match self.sealer {
            Some(s) => s.open_or_missing(self.binding, kind, token),
            None => Err(EdgeError::SearchContextMissing(
                token.chars().take(64).collect(),
            )),
        }
    }
}

/// Writes the target of a key's request (canonical path, then the query) with its tokens
/// opened (see the module docs).
pub fn write_target(
    ids: &KeyIds<'_>,
    c: &Classified<'_>,
    query: Option<&[u8]>,
    out: &mut Vec<u8>,
) -> Result<(), EdgeError> {
    let pattern = c.route.map(|r| r.pattern).unwrap_or_default();
    let n = c.path.len();
    for i in 0..n {
        let seg = c.path.seg(i);
        out.push(b'/');
        if pattern.get(i) == Some(&Seg::ScrollIds) {
            let mut opened = Vec::new();
            for (k, token) in seg.split(|&b| b == b',').enumerate() {
                if k > 0 {
                    opened.push(b',');
                }
                let token = String::from_utf8_lossy(token);
                opened.extend_from_slice(ids.open(IdKind::Scroll, &token)?.as_bytes());
            }
            encode_segment(&opened, out);
        } else {
            encode_segment(seg, out);
        }
    }
    if n == 0 {
        out.push(b'/');
    }
    let Some(q) = query else {
        return Ok(());
    };
    let scroll = c.route.is_some_and(|r| r.name == "_search/scroll");
    out.push(b'?');
    let mut seen_id = false;
    for (k, p) in crate::percent::raw_pairs(q).enumerate() {
        let name = crate::percent::decode_str(p.name, crate::percent::Plus::Space)
            .map_err(|_| illegal("a query parameter name does not decode"))?;
        if name == "source" || name == "source_content_type" {
            return Err(illegal(format!(
                "a body in the query string ([{name}]) is not taken from a cluster key; send it as the request body"
            )));
        }
        if k > 0 {
            out.push(b'&');
        }
        if scroll && name == "scroll_id" {
            if std::mem::replace(&mut seen_id, true) {
                return Err(illegal("[scroll_id] is given twice"));
            }
            let value = crate::percent::decode_str(p.value, crate::percent::Plus::Space)
                .map_err(|_| illegal("[scroll_id] does not decode"))?;
            let mut opened = Vec::new();
            for (j, token) in value.split(',').enumerate() {
                if j > 0 {
                    opened.push(b',');
                }
                opened.extend_from_slice(ids.open(IdKind::Scroll, token)?.as_bytes());
            }
            out.extend_from_slice(b"scroll_id=");
            encode_segment(&opened, out);
        } else {
            out.extend_from_slice(p.name);
            if p.has_value {
                out.push(b'=');
                out.extend_from_slice(p.value);
            }
        }
    }
    Ok(())
}

/// The body kinds of a key's request the edge reads for ids (whole, before sending).
pub fn reads_body(kind: BodyKind) -> bool {
    matches!(
        kind,
        BodyKind::Scroll
            | BodyKind::ClearScroll
            | BodyKind::ClosePit
            | BodyKind::ClosePitIds
            | BodyKind::Search
            | BodyKind::Msearch
    )
}

/// What [`open_body`] made of a key's body.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Opened {
    /// The body to forward instead (`None`: as it came: nothing to open, and the strict
    /// parser read it as the engine will).
    pub body: Option<Vec<u8>>,
    /// A search of a point in time (its path must name no index).
    pub pit: bool,
}

/// A key's body of `kind` with its tokens opened.
pub fn open_body(ids: &KeyIds<'_>, kind: BodyKind, body: &[u8]) -> Result<Opened, EdgeError> {
    if !reads_body(kind) || body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Opened::default());
    }
    if kind == BodyKind::Msearch {
        return msearch(body).map(|()| Opened::default());
    }
    let mut v = json::parse(body)?;
    let Value::Object(o) = &mut v else {
        return Err(parsing("the request body is not a JSON object"));
    };
    let (member, kind_of) = match kind {
        BodyKind::Scroll | BodyKind::ClearScroll => ("scroll_id", IdKind::Scroll),
        BodyKind::ClosePit => ("id", IdKind::Pit),
        BodyKind::ClosePitIds => ("pit_id", IdKind::Pit),
        _ => ("pit", IdKind::Pit),
    };
    let Some(slot) = o.get_mut(member) else {
        return Ok(Opened::default());
    };
    if member == "pit" {
        let Value::Object(pit) = slot else {
            return Err(parsing("[pit] must be an object"));
        };
        match pit.get_mut("id") {
            Some(id) => open_ids(ids, kind_of, id, "pit.id")?,
            None => return Err(parsing("[pit] requires a string [id]")),
        }
    } else {
        open_ids(ids, kind_of, slot, member)?;
    }
    let mut out = Vec::with_capacity(body.len());
    json::write(&v, &mut out);
    Ok(Opened {
        body: Some(out),
        pit: member == "pit",
    })
}

/// Drops the first segment of a target (`/site*/_search?q` → `/_search?q`): the key's
/// patterns the edge inserted where the path named no index, when the body searches a
/// point in time instead (Elasticsearch refuses indices with one).
pub fn drop_first_segment(target: &mut Vec<u8>) {
    if let Some(i) = target.get(1..).and_then(|t| memchr::memchr(b'/', t)) {
        target.drain(..=i);
    }
}

fn open_ids(ids: &KeyIds<'_>, kind: IdKind, v: &mut Value, at: &str) -> Result<(), EdgeError> {
    match v {
        Value::String(s) => {
            *s = ids.open(kind, s)?;
            Ok(())
        }
        Value::Array(list) => list.iter_mut().try_for_each(|x| open_ids(ids, kind, x, at)),
        _ => Err(parsing(format!(
            "[{at}] must be a string or an array of strings"
        ))),
    }
}

/// An `_msearch` body of a key: every line read strictly; a top-level `pit` refused (the
/// multi-search answer nests the ids it would hand out, which are not sealed).
fn msearch(body: &[u8]) -> Result<(), EdgeError> {
    for line in body.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let v = json::parse(line)?;
        if matches!(&v, Value::Object(o) if o.get("pit").is_some()) {
            return Err(illegal(
                "[pit] in _msearch is not taken from a cluster key; search the point in time with _search",
            ));
        }
    }
    Ok(())
}

/// Which ids a response to a key's request of `c` carries, to be sealed (`None`: none).
pub fn response_ids(c: &Classified<'_>) -> Option<IdFields> {
    let route = c.route?;
    match route.tenancy {
        Tenancy::Rewrite { response, .. } => match response {
            ResponseKind::Search => Some(IdFields::Search),
            ResponseKind::PitOpen => Some(IdFields::PitOpen),
            ResponseKind::PitList => Some(IdFields::PitList),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
#[path = "key_ids_tests.rs"]
mod tests;
