//! Scroll and point-in-time ids bound to the cluster that opened them.
//!
//! An upstream scroll id names search contexts on the shared upstream, and an Elasticsearch
//! 7.10 point-in-time id encodes shard ids, that is prefixed index names: neither may reach
//! a tenant as it is. The edge seals them:
//!
//! `token = "sg1." + base64url(nonce ‖ ChaCha20-Poly1305(key, nonce, upstream id, ad))`
//!
//! with `key` a subkey of the node secret (`searchgate/tenancy/ids/v1`), `ad = kind ‖
//! cluster id`, and a 96-bit nonce derived from what is sealed (HMAC-SHA256 under a second
//! subkey, `searchgate/tenancy/ids/nonce/v1`, of `ad` and the id: a synthetic nonce, as in
//! SIV). So one upstream id always gives one token, as Elasticsearch gives one id back: a
//! point in time's `pit_id` is compared with the one the client sent (the official clients'
//! flows do), and a scroll keeps its id from page to page. Distinct ids get distinct nonces
//! (a collision needs about 2^48 ids under one key). A token opens only on the cluster
//! that got it and for the kind it was issued as; another cluster's token, a tampered or
//! truncated one, or a raw upstream id opens to nothing, which the edge answers as
//! Elasticsearch answers a missing context (404 `search_context_missing_exception`). Tokens
//! reveal their length, and whether two of them hold the same id (which the tenant was
//! given anyway).
//!
//! [`IdFilter`] seals ids in responses as they stream: JSON-aware on the top level only
//! (`_scroll_id` and `pit_id` of search responses, `id` of a point-in-time opening), every
//! other byte through the prefix [`Stripper`]. A body that is not a JSON object (YAML,
//! Smile, CBOR: attacks-10 #3) is never released: it is replaced by [`refused_body`], a
//! 502 error; the edge should refuse it before writing the head
//! (`ResponsePlan::check_upstream`).
//!
//! The filter keeps the upstream ids it sealed ([`IdFilter::sealed`]), which the edge
//! counts against the plan's limit of open contexts (`contexts`).
//!
//! Must not touch: I/O, the registry, request routing.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::hmac;

use super::json::StringState;
use super::prefix::{Stripper, TenancyKey};
use crate::errors::EdgeError;

/// The version tag every token starts with.
pub const TOKEN_TAG: &str = "sg1.";
/// Longest upstream id sealed (a scroll over many shards has a long id).
const MAX_ID: usize = 1 << 20;

/// What an id opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    Scroll,
    Pit,
}

impl IdKind {
    fn tag(self) -> u8 {
        match self {
            IdKind::Scroll => b's',
            IdKind::Pit => b'p',
        }
    }
}

/// What a cluster's tokens are bound to, besides their kind: the cluster id for its master
/// pair, the cluster id and the key id for one of its keys. A key continues and closes only
/// the scrolls and points in time it opened itself (issue 29: a `search` key continues and
/// clears its own scrolls), never the master's or another key's (a key limited to `site*`
/// holding the master's scroll over `secret` would read `secret`: `tests/it/attack_keys.rs`).
/// The master's binding is the cluster id alone, so tokens issued before keys existed
/// still open. A byte no cluster id holds (`\u{1f}`) separates the two.
pub fn binding<'a>(cluster: &'a str, key: Option<&str>) -> std::borrow::Cow<'a, str> {
    match key {
        None => std::borrow::Cow::Borrowed(cluster),
        Some(k) => std::borrow::Cow::Owned(format!("{cluster}\u{1f}{k}")),
    }
}

/// Seals and opens ids with the node's key (one per edge node, shared by all cores).
pub struct IdSealer {
    key: LessSafeKey,
    /// Derives each token's nonce from what it seals.
    nonce_key: hmac::Key,
}

impl std::fmt::Debug for IdSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdSealer(***)")
    }
}

fn aad(kind: IdKind, cluster: &str) -> Vec<u8> {
    let mut ad = Vec::with_capacity(cluster.len() + 1);
    ad.push(kind.tag());
    ad.extend_from_slice(cluster.as_bytes());
    ad
}

impl IdSealer {
    /// The sealer of the node whose secret is `key`.
    pub fn new(key: &TenancyKey) -> IdSealer {
        let sub = key.subkey(b"searchgate/tenancy/ids/v1");
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, &sub).expect("a 32-byte key");
        let nonce_key = key.subkey(b"searchgate/tenancy/ids/nonce/v1");
        IdSealer {
            key: LessSafeKey::new(unbound),
            nonce_key: hmac::Key::new(hmac::HMAC_SHA256, &nonce_key),
        }
    }

    /// The token for `upstream_id`, bound to `cluster` and `kind`.
    pub fn seal(&self, cluster: &str, kind: IdKind, upstream_id: &[u8]) -> String {
        let ad = aad(kind, cluster);
        let mut mac = hmac::Context::with_key(&self.nonce_key);
        mac.update(&(ad.len() as u64).to_be_bytes());
        mac.update(&ad);
        mac.update(upstream_id);
        let mut nonce_bytes = [0u8; NONCE_LEN];
        nonce_bytes.copy_from_slice(&mac.sign().as_ref()[..NONCE_LEN]);
        let mut buf = upstream_id.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce_bytes),
                Aad::from(ad),
                &mut buf,
            )
            .expect("sealing a bounded id");
        let mut raw = Vec::with_capacity(NONCE_LEN + buf.len());
        raw.extend_from_slice(&nonce_bytes);
        raw.extend_from_slice(&buf);
        let mut token = String::from(TOKEN_TAG);
        URL_SAFE_NO_PAD.encode_string(&raw, &mut token);
        token
    }

    /// The upstream id inside `token`, when it was sealed for `cluster` and `kind`.
    pub fn open(&self, cluster: &str, kind: IdKind, token: &str) -> Option<String> {
        let body = token.strip_prefix(TOKEN_TAG)?;
        let mut raw = URL_SAFE_NO_PAD.decode(body).ok()?;
        if raw.len() < NONCE_LEN {
            return None;
        }
        let mut nonce = [0; NONCE_LEN];
        nonce.copy_from_slice(&raw[..NONCE_LEN]);
        let plain = self
            .key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(kind, cluster)),
                &mut raw[NONCE_LEN..],
            )
            .ok()?;
        String::from_utf8(plain.to_vec()).ok()
    }

    /// Like [`IdSealer::open`], refusing as Elasticsearch refuses a missing context.
    pub fn open_or_missing(
        &self,
        cluster: &str,
        kind: IdKind,
        token: &str,
    ) -> Result<String, EdgeError> {
        self.open(cluster, kind, token).ok_or_else(|| {
            let shown: String = token.chars().take(64).collect();
            EdgeError::SearchContextMissing(shown)
        })
    }
}

/// Which top-level fields of a response hold ids to seal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdFields {
    /// A search response: `_scroll_id` (a scroll) and `pit_id` (a point in time).
    Search,
    /// A point-in-time opening: `id` (Elasticsearch), `pit_id` (OpenSearch).
    PitOpen,
    /// OpenSearch's list of points in time: `pits[].pit_id`, sealed by the list filter
    /// (`response::PitList`), not by [`IdFilter`].
    PitList,
}

impl IdFields {
    fn kind_of(self, key: &[u8]) -> Option<IdKind> {
        match (self, key) {
            (IdFields::Search, b"_scroll_id") => Some(IdKind::Scroll),
            (IdFields::Search | IdFields::PitOpen, b"pit_id") | (IdFields::PitOpen, b"id") => {
                Some(IdKind::Pit)
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Before the root value.
    Start,
    /// Root is not an object, or ended: strip only.
    Pass,
    /// Top level: between members (expecting a key, `,` or `}`).
    Member,
    InKey,
    /// After a top-level key: `:` then the value.
    Colon,
    Value,
    /// Inside a top-level value (nested or scalar).
    Nested,
    /// Inside a captured top-level string value.
    Capture,
    /// The body is not a JSON object (YAML, Smile, CBOR, a bare array...): nothing more of
    /// it is released, the safe message was written instead.
    Refused,
}

/// What replaces a body the filter cannot read (it may hold raw ids): the edge's 502 error.
pub fn refused_body() -> Vec<u8> {
    EdgeError::BadGateway(
        "the upstream answered with a body that is not a JSON object where scroll or point-in-time ids must be sealed",
    )
    .body()
    .to_bytes()
}

/// A response filter sealing ids (see the module docs); everything else is stripped of the
/// tenant's prefix.
#[derive(Debug)]
pub struct IdFilter {
    strip: Stripper,
    sealer: Arc<IdSealer>,
    cluster: Arc<str>,
    fields: IdFields,
    st: St,
    depth: u32,
    strings: StringState,
    /// An escape inside a key or a captured id.
    esc: bool,
    key: Vec<u8>,
    target: Option<IdKind>,
    capture: Vec<u8>,
    /// The upstream ids sealed so far.
    sealed: Vec<(IdKind, String)>,
    /// [`refused_body`] was written (once).
    written_refusal: bool,
    /// The bytes of the top-level `_shards` value while it is read (bounded).
    shards_value: Option<Vec<u8>>,
    /// `_shards.total` of the response, once read: the shard contexts a scroll opened.
    shards_total: Option<u64>,
}

/// Longest `_shards` value read for its `total` (`{"total":..,"successful":..,...}`).
const MAX_SHARDS_VALUE: usize = 512;

impl IdFilter {
    /// A filter that refuses the body outright (the upstream's media type is not JSON).
    pub fn refusing(strip: Stripper, sealer: Arc<IdSealer>, fields: IdFields) -> Self {
        let mut f = IdFilter::new(strip, sealer, Arc::from(""), fields);
        f.st = St::Refused;
        f
    }

    /// True once the body was found unreadable (never released, see [`refused_body`]).
    pub fn refused(&self) -> bool {
        self.st == St::Refused
    }

    pub fn new(
        strip: Stripper,
        sealer: Arc<IdSealer>,
        cluster: Arc<str>,
        fields: IdFields,
    ) -> Self {
        IdFilter {
            strip,
            sealer,
            cluster,
            fields,
            st: St::Start,
            depth: 0,
            strings: StringState::default(),
            esc: false,
            key: Vec::new(),
            target: None,
            capture: Vec::new(),
            sealed: Vec::new(),
            written_refusal: false,
            shards_value: None,
            shards_total: None,
        }
    }

    /// `_shards.total` of the response (the shards the upstream searched), once read.
    pub fn shards_total(&self) -> Option<u64> {
        self.shards_total
    }

    /// The upstream ids sealed so far, with their kind.
    pub fn sealed(&self) -> &[(IdKind, String)] {
        &self.sealed
    }

    /// Filters the next chunk, appending to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) {
        let mut run = 0;
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            match self.st {
                St::Pass => {
                    self.strip.feed(&input[run..], out);
                    return;
                }
                St::Refused => {
                    self.write_refusal(out);
                    return;
                }
                St::Capture => {
                    i = self.capture_bytes(input, i, out);
                    run = i;
                    continue;
                }
                St::Nested => self.nested_byte(b),
                _ => {
                    if self.top_byte(b) {
                        // a captured value starts after this quote
                        self.strip.feed(&input[run..=i], out);
                        self.strip.finish(out);
                        run = i + 1;
                    } else if self.st == St::Refused {
                        // what came before (whitespace) goes; this byte and the rest never
                        self.strip.feed(&input[run..i], out);
                        self.write_refusal(out);
                        return;
                    }
                }
            }
            i += 1;
        }
        if self.st != St::Capture {
            self.strip.feed(&input[run..], out);
        }
    }

    /// Ends the response.
    pub fn finish(&mut self, out: &mut Vec<u8>) {
        match self.st {
            // cut inside an id: never release it
            St::Capture => out.push(b'"'),
            St::Refused => self.write_refusal(out),
            _ => {}
        }
        self.strip.finish(out);
    }

    fn write_refusal(&mut self, out: &mut Vec<u8>) {
        if !std::mem::replace(&mut self.written_refusal, true) {
            self.strip.finish(out);
            out.extend_from_slice(&refused_body());
        }
    }

    /// One byte at the top level; true when a captured string value starts.
    fn top_byte(&mut self, b: u8) -> bool {
        let ws = matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        match (self.st, b) {
            (St::Start, _) if ws => {}
            (St::Start, b'{') => self.st = St::Member,
            // YAML (`---`), Smile (`:)`), CBOR (0xBF), an array: ids could be in it unsealed
            (St::Start, _) => self.st = St::Refused,
            (St::Member, b'"') => {
                self.key.clear();
                self.esc = false;
                self.st = St::InKey;
            }
            (St::Member, b'}') => self.st = St::Pass,
            (St::Member, _) => {}
            (St::InKey, _) if self.esc => {
                self.esc = false;
                self.push_key(b);
            }
            (St::InKey, b'\\') => {
                self.esc = true;
                self.push_key(b);
            }
            (St::InKey, b'"') => {
                self.target = self.fields.kind_of(&self.key);
                if self.key == b"_shards" && self.shards_total.is_none() {
                    self.shards_value = Some(Vec::new());
                }
                self.st = St::Colon;
            }
            (St::InKey, _) => self.push_key(b),
            (St::Colon, b':') => self.st = St::Value,
            (St::Colon, _) => {}
            (St::Value, _) if ws => {}
            (St::Value, b'"') if self.target.is_some() => {
                self.capture.clear();
                self.esc = false;
                self.st = St::Capture;
                return true;
            }
            (St::Value, _) => {
                self.st = St::Nested;
                self.depth = 0;
                self.strings = StringState::default();
                self.nested_byte(b);
            }
            _ => {}
        }
        false
    }

    fn push_key(&mut self, b: u8) {
        if self.key.len() < 64 {
            self.key.push(b);
        }
    }

    /// One byte inside a top-level value that is not captured.
    fn nested_byte(&mut self, b: u8) {
        if let Some(v) = self
            .shards_value
            .as_mut()
            .filter(|v| v.len() < MAX_SHARDS_VALUE)
        {
            v.push(b);
        }
        if self.strings.step(b) {
            return;
        }
        match b {
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' if self.depth == 0 => {
                // a scalar value ended by the root's closing brace
                self.st = St::Pass;
            }
            b'}' | b']' => self.depth -= 1,
            b',' if self.depth == 0 => self.st = St::Member,
            _ => {}
        }
        if self.st != St::Nested {
            self.end_shards_value();
        }
    }

    /// The top-level `_shards` value ended (with the byte that ended it): its `total`.
    fn end_shards_value(&mut self) {
        let Some(mut v) = self.shards_value.take() else {
            return;
        };
        v.pop(); // the `,` or `}` after the value
        self.shards_total = serde_json::from_slice::<serde_json::Value>(&v)
            .ok()
            .and_then(|s| s.get("total")?.as_u64());
    }

    /// Bytes of a captured id from `i`; returns where scanning resumes.
    fn capture_bytes(&mut self, input: &[u8], mut i: usize, out: &mut Vec<u8>) -> usize {
        while i < input.len() {
            let b = input[i];
            i += 1;
            if self.esc {
                self.esc = false;
            } else if b == b'\\' {
                self.esc = true;
            } else if b == b'"' {
                self.seal_captured(out);
                self.st = St::Nested;
                self.depth = 0;
                self.strings = StringState::default();
                return i;
            }
            if self.capture.len() < MAX_ID {
                self.capture.push(b);
            }
        }
        i
    }

    fn seal_captured(&mut self, out: &mut Vec<u8>) {
        let kind = self.target.expect("capturing a target field");
        let raw = std::mem::take(&mut self.capture);
        if raw.len() < MAX_ID && !raw.contains(&b'\\') {
            let token = self.sealer.seal(&self.cluster, kind, &raw);
            out.extend_from_slice(token.as_bytes());
            self.sealed
                .push((kind, String::from_utf8_lossy(&raw).into_owned()));
        }
        out.push(b'"');
        self.capture = raw;
        self.capture.clear();
    }
}

#[cfg(test)]
#[path = "ids_tests.rs"]
mod tests;
