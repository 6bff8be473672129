//! Streaming response un-rewriting for the multitenant class: the tenant's prefix removed
//! from every byte that goes back, sealed ids, the point-in-time list confined to the
//! tenant, and for `_cat` tables of index rows the row filters of `cat`. This module picks
//! the filter a response needs and runs it.
//!
//! Must not touch: requests, I/O. The edge must send the result with chunked framing (the
//! length changes) and must ask the upstream for an identity encoding.

use std::sync::Arc;

use super::cat::{CatJson, CatText, MAX_TABLE};
use super::ids::{IdFields, IdFilter, IdSealer};
use super::prefix::{Prefix, Stripper};
use super::snippets::SnippetRedactor;
use crate::errors::EdgeError;
use crate::request::classify::ResponseKind;

/// What the request plan says about the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponsePlan {
    pub kind: ResponseKind,
    /// `_cat` with `?v`: the first text line is a header.
    pub verbose: bool,
    /// `_cat` with `?help`: a description table, not index rows.
    pub help: bool,
    /// Top-level ids to seal (a scroll or point in time was opened or used).
    pub ids: Option<IdFields>,
}

impl ResponsePlan {
    /// Whether the edge can release an upstream response of `content_type` to this request:
    /// where ids are sealed, only a JSON body (or none) is readable (attacks-10 #3: a YAML,
    /// Smile or CBOR search or point-in-time response would carry raw ids). The edge calls
    /// this before it writes the response head and answers the error (502) instead; the
    /// response filter refuses such a body anyway ([`super::ids::refused_body`]).
    pub fn check_upstream(&self, content_type: Option<&[u8]>) -> Result<(), EdgeError> {
        let readable = |ct: &[u8]| {
            super::media::parse(&String::from_utf8_lossy(ct)).is_some_and(|m| {
                m.kind == "application" && (m.subtype == "json" || m.subtype.ends_with("+json"))
            })
        };
        match (self.ids, content_type) {
            (Some(_), Some(ct)) if !readable(ct) => Err(EdgeError::BadGateway(
                "the upstream answered with a media type other than JSON where scroll or point-in-time ids must be sealed",
            )),
            _ => Ok(()),
        }
    }
}

/// The response transform of one multitenant response: parser source snippets redacted
/// first ([`SnippetRedactor`], attacks-10 r2 #1), then the prefix removed as the plan says.
#[derive(Debug)]
pub struct ResponseRewriter {
    /// `None`: a single-tenant key's response, whose ids only are sealed.
    snippets: Option<SnippetRedactor>,
    /// The redacted bytes of the chunk being fed (reused).
    redacted: Vec<u8>,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Strip(Stripper),
    Ids(Box<IdFilter>),
    CatText(CatText),
    CatJson(CatJson),
    Pits(PitList),
}

/// Which upstream point-in-time ids belong to the cluster of the request.
pub type PitOwner = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// OpenSearch's `{"pits": [{"pit_id", ...}, ...]}` (a list or a close): read whole (at
/// most [`MAX_TABLE`] bytes: the upstream's open contexts are bounded), entries whose id
/// the cluster does not own dropped, the others' ids sealed; anything else (too long, not
/// that shape) is never released ([`super::ids::refused_body`]).
pub struct PitList {
    strip: Stripper,
    sealer: Arc<IdSealer>,
    cluster: Arc<str>,
    owner: Option<PitOwner>,
    buf: Vec<u8>,
    too_long: bool,
}

impl std::fmt::Debug for PitList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PitList")
            .field("buffered", &self.buf.len())
            .finish()
    }
}

impl PitList {
    fn feed(&mut self, input: &[u8]) {
        if self.buf.len() + input.len() > MAX_TABLE {
            self.too_long = true;
            self.buf.clear();
        } else if !self.too_long {
            self.buf.extend_from_slice(input);
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        match self.confined() {
            Some(body) => {
                self.strip.feed(&body, out);
                self.strip.finish(out);
            }
            None => out.extend_from_slice(&super::ids::refused_body()),
        }
    }

    fn confined(&self) -> Option<Vec<u8>> {
        use super::json::Value;
        if self.too_long {
            return None;
        }
        let mut v = super::json::parse(&self.buf).ok()?;
        let Value::Object(o) = &mut v else {
            return None;
        };
        let Some(Value::Array(pits)) = o.get_mut("pits") else {
            return None;
        };
        let owner = self.owner.as_ref()?;
        let mut kept = Vec::with_capacity(pits.len());
        for mut p in pits.drain(..) {
            let Value::Object(entry) = &mut p else {
                return None;
            };
            let Some(Value::String(id)) = entry.get_mut("pit_id") else {
                return None;
            };
            if owner(id) {
                *id = self
                    .sealer
                    .seal(&self.cluster, super::IdKind::Pit, id.as_bytes());
                kept.push(p);
            }
        }
        *pits = kept;
        let mut out = Vec::new();
        super::json::write(&v, &mut out);
        Some(out)
    }
}

impl ResponseRewriter {
    /// The transform for a response of `status` with `content_type` to a request planned
    /// with `plan`. Errors and non-table bodies are stripped only; a search that can carry
    /// ids has them sealed (with `ids`: the node's sealer and the cluster id; without,
    /// an id is never released).
    pub fn new(
        prefix: Prefix,
        plan: ResponsePlan,
        status: u16,
        content_type: Option<&[u8]>,
        ids: Option<(Arc<IdSealer>, Arc<str>)>,
    ) -> Self {
        ResponseRewriter {
            snippets: Some(SnippetRedactor::new()),
            redacted: Vec::new(),
            kind: Kind::new(prefix, plan, status, content_type, ids),
        }
    }

    /// The transform of a response to a single-tenant key's request (`key_ids`): no prefix,
    /// the ids of `fields` sealed with `ids` (the node's sealer and the key's binding);
    /// a body that is not JSON where ids are sealed is never released. OpenSearch's close
    /// answer lists only ids the key sent (opened from its own tokens): all are sealed.
    pub fn sealing(
        fields: IdFields,
        status: u16,
        content_type: Option<&[u8]>,
        ids: (Arc<IdSealer>, Arc<str>),
    ) -> Self {
        let (sealer, binding) = ids;
        let plan = ResponsePlan {
            kind: ResponseKind::Search,
            verbose: false,
            help: false,
            ids: Some(fields),
        };
        let kind = if fields == IdFields::PitList && (200..300).contains(&status) {
            let all: PitOwner = Arc::new(|_: &str| true);
            Kind::Pits(PitList {
                strip: Stripper::none(),
                sealer,
                cluster: binding,
                owner: Some(all),
                buf: Vec::new(),
                too_long: false,
            })
        } else if plan.check_upstream(content_type).is_err() {
            Kind::Ids(Box::new(IdFilter::refusing(
                Stripper::none(),
                sealer,
                fields,
            )))
        } else {
            Kind::Ids(Box::new(IdFilter::new(
                Stripper::none(),
                sealer,
                binding,
                fields,
            )))
        };
        ResponseRewriter {
            snippets: None,
            redacted: Vec::new(),
            kind,
        }
    }

    /// Transforms the next chunk of the body.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        match &mut self.snippets {
            Some(snippets) => {
                self.redacted.clear();
                snippets.feed(input, &mut self.redacted);
                self.kind.feed(&self.redacted, out);
            }
            None => self.kind.feed(input, out),
        }
    }

    /// The upstream scroll and point-in-time ids sealed so far (none unless the plan
    /// seals ids).
    pub fn sealed(&self) -> &[(super::IdKind, String)] {
        match &self.kind {
            Kind::Ids(f) => f.sealed(),
            _ => &[],
        }
    }

    /// `_shards.total` of a response whose ids are sealed (a search), once read.
    pub fn shards_total(&self) -> Option<u64> {
        match &self.kind {
            Kind::Ids(f) => f.shards_total(),
            _ => None,
        }
    }

    /// Says which point-in-time ids the cluster owns (an OpenSearch list keeps only
    /// those; without an owner it releases nothing).
    pub fn set_pit_owner(&mut self, owner: PitOwner) {
        if let Kind::Pits(p) = &mut self.kind {
            p.owner = Some(owner);
        }
    }

    /// Ends the body.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        if let Some(snippets) = &mut self.snippets {
            self.redacted.clear();
            snippets.finish(&mut self.redacted);
            self.kind.feed(&self.redacted, out);
        }
        self.kind.finish(out);
    }
}

impl Kind {
    fn new(
        prefix: Prefix,
        plan: ResponsePlan,
        status: u16,
        content_type: Option<&[u8]>,
        ids: Option<(Arc<IdSealer>, Arc<str>)>,
    ) -> Self {
        let table =
            plan.kind == ResponseKind::CatRows && !plan.help && (200..300).contains(&status);
        let json = content_type.is_some_and(|ct| memchr::memmem::find(ct, b"json").is_some());
        if plan.kind == ResponseKind::PitList && (200..300).contains(&status) {
            let (sealer, cluster) = ids.unwrap_or_else(|| {
                (
                    Arc::new(IdSealer::new(&super::TenancyKey::generate())),
                    Arc::from(""),
                )
            });
            return Kind::Pits(PitList {
                strip: Stripper::new(prefix),
                sealer,
                cluster,
                owner: None,
                buf: Vec::new(),
                too_long: false,
            });
        }
        if let (Some(fields), Err(_)) = (plan.ids, plan.check_upstream(content_type)) {
            let sealer = Arc::new(IdSealer::new(&super::TenancyKey::generate()));
            let filter = IdFilter::refusing(Stripper::new(prefix), sealer, fields);
            return Kind::Ids(Box::new(filter));
        }
        if let (Some(fields), Some((sealer, cluster))) = (plan.ids, ids) {
            let filter = IdFilter::new(Stripper::new(prefix), sealer, cluster, fields);
            return Kind::Ids(Box::new(filter));
        }
        if let Some(fields) = plan.ids {
            let missing = Arc::new(IdSealer::new(&super::TenancyKey::generate()));
            let filter = IdFilter::new(Stripper::new(prefix), missing, Arc::from(""), fields);
            return Kind::Ids(Box::new(filter));
        }
        match (table, json) {
            (true, true) => Kind::CatJson(CatJson::new(prefix)),
            (true, false) => Kind::CatText(CatText::new(prefix, plan.verbose)),
            _ => Kind::Strip(Stripper::new(prefix)),
        }
    }

    fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        match self {
            Kind::Strip(s) => s.feed(input, out),
            Kind::Ids(f) => f.feed(input, out),
            Kind::CatText(c) => c.feed(input, out),
            Kind::CatJson(c) => c.feed(input, out),
            Kind::Pits(p) => p.feed(input),
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        match self {
            Kind::Strip(s) => s.finish(out),
            Kind::Ids(f) => f.finish(out),
            Kind::CatText(c) => c.finish(out),
            Kind::CatJson(c) => c.finish(out),
            Kind::Pits(p) => p.finish(out),
        }
    }
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
