//! The memory a request may take (issue 25: no tenant takes the engine's memory), as
//! Elasticsearch's circuit breakers bound it: what a request builds in memory (its parsed
//! body, the documents of an `_mget`, the responses of an `_msearch`, search hits, the
//! aggregations, the response bytes) is charged, while the connection's thread serves it
//! ([`Scope`]), against two limits:
//!
//! - the **request** budget (`--breaker-request-mb`, 100 MB): one request's charges;
//! - the **parent** budget (`--breaker-total-mb`, 1024 MB): the charges of every request
//!   in flight at once, so that many requests within their own budget cannot take the
//!   process's memory together.
//!
//! A charge over either is refused with 429 `circuit_breaking_exception` ("Data too
//! large", `bytes_wanted`, `bytes_limit`, `durability: TRANSIENT`), as Elasticsearch
//! answers; the request's charges are given back when its scope ends (answer written,
//! client gone, or panic). Charges are estimates of heap bytes ([`value_bytes`]), made where
//! the memory grows with what the client asked for; fixed per-request costs are not charged.
//! Outside a scope (unit tests, background threads) nothing is charged.
//!
//! The decision ([`decide`]) is pure. Must not touch: what the work computes.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::error::{EngineError, EngineResult};

/// Default request budget, in MB.
pub const DEFAULT_REQUEST_MB: u64 = 100;
/// Default budget of all requests in flight, in MB.
pub const DEFAULT_TOTAL_MB: u64 = 1024;

static REQUEST_LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_REQUEST_MB << 20);
static TOTAL_LIMIT: AtomicU64 = AtomicU64::new(DEFAULT_TOTAL_MB << 20);
/// Bytes charged by every request in flight.
static IN_FLIGHT: AtomicU64 = AtomicU64::new(0);
/// Requests refused by a breaker since the engine started.
static TRIPPED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Bytes charged by the request this thread serves (None: no request).
    static HELD: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The two budgets, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub request: u64,
    pub total: u64,
}

/// Sets the budgets (at start, from the engine's options).
pub fn configure(l: Limits) {
    REQUEST_LIMIT.store(l.request, Ordering::Relaxed);
    TOTAL_LIMIT.store(l.total, Ordering::Relaxed);
}

fn limits() -> Limits {
    Limits {
        request: REQUEST_LIMIT.load(Ordering::Relaxed),
        total: TOTAL_LIMIT.load(Ordering::Relaxed),
    }
}

/// Bytes charged by all requests in flight now.
pub fn in_flight() -> u64 {
    IN_FLIGHT.load(Ordering::Relaxed)
}

/// Requests refused by a breaker since the engine started.
pub fn tripped() -> u64 {
    TRIPPED.load(Ordering::Relaxed)
}

/// Which budget a charge would exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breaker {
    Request,
    Parent,
}

/// A refused charge: the budget, what the holder would have, its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exceeded {
    pub breaker: Breaker,
    pub wanted: u64,
    pub limit: u64,
}

/// Whether `add` more bytes fit for a request holding `held` while all requests hold
/// `in_flight` (its own `held` included).
pub fn decide(held: u64, in_flight: u64, add: u64, l: Limits) -> Result<(), Exceeded> {
    let wanted = held.saturating_add(add);
    if wanted > l.request {
        return Err(Exceeded {
            breaker: Breaker::Request,
            wanted,
            limit: l.request,
        });
    }
    let total = in_flight.saturating_add(add);
    if total > l.total {
        return Err(Exceeded {
            breaker: Breaker::Parent,
            wanted: total,
            limit: l.total,
        });
    }
    Ok(())
}

/// The request a connection's thread serves: its charges are given back when dropped.
#[derive(Debug)]
pub struct Scope(());

impl Scope {
    /// Starts charging the current thread's request.
    pub fn enter() -> Scope {
        HELD.with(|h| h.set(Some(0)));
        Scope(())
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let Some(n) = HELD.with(|h| h.replace(None)) {
            IN_FLIGHT.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

/// Charges `bytes` for `what` to the current request; 429 `circuit_breaking_exception`
/// when a budget would be exceeded (nothing is charged then).
pub fn charge(bytes: u64, what: &str) -> EngineResult<()> {
    HELD.with(|h| {
        let Some(held) = h.get() else { return Ok(()) };
        let now = IN_FLIGHT.fetch_add(bytes, Ordering::Relaxed);
        match decide(held, now, bytes, limits()) {
            Ok(()) => {
                h.set(Some(held + bytes));
                Ok(())
            }
            Err(e) => {
                IN_FLIGHT.fetch_sub(bytes, Ordering::Relaxed);
                TRIPPED.fetch_add(1, Ordering::Relaxed);
                Err(EngineError::CircuitBreaking {
                    breaker: match e.breaker {
                        Breaker::Request => "request",
                        Breaker::Parent => "parent",
                    },
                    what: what.to_string(),
                    wanted: e.wanted,
                    limit: e.limit,
                })
            }
        }
    })
}

/// Gives back `bytes` of the current request's charges (memory it dropped, or memory about
/// to be charged again in another form).
pub fn release(bytes: u64) {
    HELD.with(|h| {
        if let Some(held) = h.get() {
            let n = bytes.min(held);
            h.set(Some(held - n));
            IN_FLIGHT.fetch_sub(n, Ordering::Relaxed);
        }
    })
}

/// Bytes the current request holds (0 outside a request).
pub fn held() -> u64 {
    HELD.with(|h| h.get()).unwrap_or(0)
}

/// Bytes the current request may still charge before its own budget is exceeded (the
/// whole request budget outside a request).
pub fn remaining() -> u64 {
    let l = limits();
    let held = HELD.with(|h| h.get()).unwrap_or(0);
    l.request.saturating_sub(held)
}

/// Heap bytes a parsed JSON value takes, estimated from serde_json's layout (a `Value`'s
/// own size, 72 bytes with the ordered map; per object entry its key and the map's
/// bookkeeping; strings their bytes).
pub fn value_bytes(v: &Value) -> u64 {
    const SLOT: u64 = std::mem::size_of::<Value>() as u64;
    /// Key `String` (24), hash and index slot of the ordered map.
    const ENTRY: u64 = 24 + 16;
    SLOT + match v {
        Value::String(s) => s.len() as u64,
        Value::Array(a) => a.iter().map(value_bytes).sum::<u64>(),
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| ENTRY + k.len() as u64 + value_bytes(v))
            .sum::<u64>(),
        // arbitrary_precision keeps a number's digits in a string
        Value::Number(n) => 24 + n.to_string().len() as u64,
        Value::Null | Value::Bool(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const L: Limits = Limits {
        request: 100,
        total: 250,
    };

    #[test]
    fn decide_at_n_and_n_plus_one() {
        let req = |wanted| {
            Err(Exceeded {
                breaker: Breaker::Request,
                wanted,
                limit: 100,
            })
        };
        let parent = |wanted| {
            Err(Exceeded {
                breaker: Breaker::Parent,
                wanted,
                limit: 250,
            })
        };
        // (held, in flight, add) -> decision
        let table = [
            ((0, 0, 100), Ok(())),
            ((0, 0, 101), req(101)),
            ((60, 60, 40), Ok(())),
            ((60, 60, 41), req(101)),
            ((10, 200, 50), Ok(())),
            ((10, 200, 51), parent(251)),
            ((0, u64::MAX, 1), parent(u64::MAX)),
            ((u64::MAX, 0, 1), req(u64::MAX)),
        ];
        for ((held, in_flight, add), want) in table {
            assert_eq!(
                decide(held, in_flight, add, L),
                want,
                "{held} {in_flight} {add}"
            );
        }
    }

    #[test]
    fn charges_are_given_back_when_the_scope_ends() {
        // outside a scope nothing is charged
        assert!(charge(u64::MAX / 2, "x").is_ok());
        let before = in_flight();
        {
            let _s = Scope::enter();
            charge(1000, "x").unwrap();
            assert!(in_flight() >= before + 1000);
            release(400);
            assert_eq!(held(), 600);
            release(10_000);
            assert_eq!(held(), 0);
            charge(1000, "x").unwrap();
            let limit = REQUEST_LIMIT.load(Ordering::Relaxed);
            let e = charge(limit, "<mget>").unwrap_err();
            let body = e.body().to_value();
            assert_eq!(body["status"], 429);
            assert_eq!(body["error"]["type"], "circuit_breaking_exception");
            assert_eq!(body["error"]["bytes_limit"], limit);
            assert_eq!(body["error"]["durability"], "TRANSIENT");
            let reason = body["error"]["reason"].as_str().unwrap().to_string();
            assert!(
                reason.starts_with("[request] Data too large, data for [<mget>] would be ["),
                "{reason}"
            );
        }
        // other tests may charge at the same time on their own threads: only ours is checked
        assert_eq!(HELD.with(|h| h.get()), None);
    }

    #[test]
    fn human_sizes() {
        use crate::error::human_bytes as human;
        assert_eq!(human(0), "0b");
        assert_eq!(human(1023), "1023b");
        assert_eq!(human(1024), "1kb");
        assert_eq!(human(100 << 20), "100mb");
        assert_eq!(human((3 << 29) + 1), "1.5gb");
    }

    #[test]
    fn value_bytes_grows_with_the_value() {
        let small = value_bytes(&json!({"a": 1}));
        let big = value_bytes(&json!({"a": 1, "b": "x".repeat(1000)}));
        assert!(big > small + 1000);
        let slot = std::mem::size_of::<Value>() as u64;
        assert_eq!(value_bytes(&json!(null)), slot);
        let ids: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
        assert!(value_bytes(&json!(ids)) > slot * 1000);
    }
}
