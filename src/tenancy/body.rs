//! Request-body filters of the multitenant class, in the two shapes the edge pipeline
//! plugs in: a streaming filter for NDJSON ([`super::ndjson::BodyRewriter`], `feed(chunk,
//! out)` / `finish(out)`), and a whole-body filter for JSON ([`rewrite_json_body`]: the
//! body read whole, bounded by the request body limit, parsed strictly, rewritten as data
//! and written again). Which one a request takes is [`RequestPlan::body`]'s kind.
//!
//! Must not touch: framing of the HTTP body (the edge de-chunks), paths, I/O.

use super::json::{self, Value};
use super::references::{
    admin::{self, ByQuery, TemplateKind},
    docs, illegal, object_mut, search, Tenant,
};
use super::RequestPlan;
use crate::errors::EdgeError;
use crate::request::classify::BodyKind;

/// What reading a whole body found that changes the rest of the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BodyFacts {
    /// A search of a point in time: the path must name no index, and the response carries
    /// a `pit_id` to seal.
    pub pit: bool,
}

/// Reads the whole JSON `body` of a request planned as `kind`, appending what the edge
/// forwards instead to `out` (nothing for an empty body). `Err`: refuse the request.
pub fn rewrite_json_body(
    t: &Tenant,
    kind: BodyKind,
    body: &[u8],
    out: &mut Vec<u8>,
) -> Result<BodyFacts, EdgeError> {
    let mut facts = BodyFacts::default();
    match kind {
        BodyKind::Document => {
            out.extend_from_slice(body);
            return Ok(facts);
        }
        BodyKind::None if body.iter().all(u8::is_ascii_whitespace) => return Ok(facts),
        BodyKind::None => return Err(illegal("this request does not support having a body")),
        BodyKind::Bulk | BodyKind::Msearch => {
            return Err(illegal("an NDJSON body is streamed, not read whole"))
        }
        _ => {}
    }
    let Some(mut v) = json::parse_opt(body)? else {
        return Ok(facts);
    };
    match kind {
        BodyKind::Search => facts.pit = search::search_body(t, &mut v, true)?.pit,
        BodyKind::QueryOnly => search::query_only(t, &mut v, "query")?,
        BodyKind::FieldCaps => search::field_caps(t, &mut v)?,
        BodyKind::Mget => docs::mget_body(t, &mut v)?,
        BodyKind::TermVectors => docs::termvectors_body(t, &mut v)?,
        BodyKind::Update => docs::update_body(object_mut(&mut v, "")?, "")?,
        BodyKind::Analyze => docs::analyze_body(&mut v)?,
        BodyKind::CreateIndex => admin::create_index_body(t, &mut v)?,
        BodyKind::Settings => admin::settings_body(&v)?,
        BodyKind::Mapping => admin::mappings(&v, "mappings")?,
        BodyKind::Aliases => admin::aliases_actions(t, &mut v)?,
        BodyKind::PutAlias => admin::put_alias_body(t, &mut v)?,
        BodyKind::Template => admin::template_body(t, TemplateKind::Legacy, &mut v)?,
        BodyKind::IndexTemplate => admin::template_body(t, TemplateKind::Composable, &mut v)?,
        BodyKind::ComponentTemplate => admin::template_body(t, TemplateKind::Component, &mut v)?,
        BodyKind::DeleteByQuery => admin::by_query_body(t, ByQuery::Delete, &mut v)?,
        BodyKind::UpdateByQuery => admin::by_query_body(t, ByQuery::Update, &mut v)?,
        BodyKind::Reindex => admin::reindex_body(t, &mut v)?,
        BodyKind::Scroll => docs::scroll_body(t, &mut v)?,
        BodyKind::ClearScroll => docs::clear_scroll_body(t, &mut v)?,
        BodyKind::ClosePit => docs::close_pit_body(t, &mut v)?,
        BodyKind::ClosePitIds => docs::close_pit_ids_body(t, &mut v)?,
        BodyKind::None | BodyKind::Document | BodyKind::Bulk | BodyKind::Msearch => {
            unreachable!("handled above")
        }
    }
    json::write(&v, out);
    Ok(facts)
}

/// A `_reindex` body on a single-tenant cluster: read strictly (so the upstream cannot
/// read it differently) and refused when its source is remote (the upstream would open
/// connections for the client). Returns the bytes to forward.
pub fn single_tenant_reindex(body: &[u8]) -> Result<Vec<u8>, EdgeError> {
    let Some(v) = json::parse_opt(body)? else {
        return Ok(Vec::new());
    };
    let remote = v
        .as_object()
        .and_then(|o| o.get("source"))
        .and_then(Value::as_object)
        .is_some_and(|s| s.get("remote").is_some());
    if remote {
        return Err(illegal(
            "[source.remote] is not supported: reindex from a remote cluster is not exposed by this service",
        ));
    }
    Ok(v.to_bytes())
}

impl RequestPlan {
    /// Applies what reading the body found: a point-in-time search names no index in its
    /// path (Elasticsearch refuses one) and gets its `pit_id` sealed. The first path
    /// segment goes when the edge put it there: the tenant's `<P>*`, or (`key_scoped`) a
    /// key's patterns, inserted in a path that named no index (the point in time, which
    /// the key opened within them, names the indices instead).
    pub fn apply_body_facts(
        &mut self,
        facts: BodyFacts,
        prefix: &super::Prefix,
        target: &mut Vec<u8>,
        key_scoped: bool,
    ) -> Result<(), EdgeError> {
        if !facts.pit {
            return Ok(());
        }
        let mut all = Vec::with_capacity(super::PREFIX_LEN + 3);
        all.push(b'/');
        all.extend_from_slice(prefix.as_bytes());
        all.extend_from_slice(b"*/");
        let first = if self.inserted_all && target.starts_with(&all) {
            Some(all.len() - 1)
        } else if key_scoped
            && target
                .get(1..)
                .is_some_and(|t| t.starts_with(prefix.as_bytes()))
        {
            memchr::memchr(b'/', &target[1..]).map(|i| i + 1)
        } else {
            None
        };
        let Some(first) = first else {
            return Err(illegal(
                "[indices] cannot be used with point in time. Do not specify any index with point in time.",
            ));
        };
        target.drain(..first);
        self.response.ids = Some(super::ids::IdFields::Search);
        self.contexts = super::contexts::ContextUse::Continue;
        Ok(())
    }
}
