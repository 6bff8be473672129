//! Issue 25 (one reading of every value the edge acts on), a differential test: time values
//! generated from pieces a client can combine (whitespace, signs, units, case,
//! percent-encoding, numbers past `i64`, fractions, non-ASCII digits) are sent as `scroll`
//! (a keep-alive the edge counts, spec 7 errors) three ways, and must be read alike:
//!
//! 1. through `searchgate serve` to a multitenant cluster whose upstream is a recording
//!    stand-in (`mock_es`): the edge either refuses the value (400, Elasticsearch's error)
//!    or forwards it, and the recording shows the form it forwarded;
//! 2. straight to a `searchgate engine` (the embedded engine's binary), as sent;
//! 3. straight to the engine again, in the form the edge forwarded.
//!
//! The edge refuses exactly what the engine refuses, with the same status and reason; what
//! it forwards is the canonical form of the value it read, which the engine takes as the
//! same duration (the two share `params::parse_time`, so the in-process reading is
//! compared too). Every row of Elasticsearch 7.10's answers (`params::table`, derived
//! from its source) is checked against what the edge does end to end.

use crate::support::{e2e, engine_support, mock_es};

use e2e::{ClusterSpec, Config, Edge, PlanSpec, Tenant};
use searchgate::params::{self, table, table::Es};
use searchgate::percent::{self, Plus};

/// Pieces of a `scroll` value, as query text (already percent-encoded where needed).
const LEAD: &[&str] = &["", "%20", "+", "%2B", "-", "%09", "%00", "0"];
const NUMBER: &[&str] = &[
    "1",
    "0",
    "30",
    "150000000000000",
    "9223372036854775807",
    "9223372036854775808",
    "1.5",
    "1e3",
    "",
    "%D9%A1",
    "-1",
];
const MIDDLE: &[&str] = &["", "%20", "+"];
const UNIT: &[&str] = &[
    "nanos", "micros", "ms", "s", "m", "h", "d", "M", "H", "MS", "D", "NANOS", "w", "",
];
const TRAIL: &[&str] = &["", "%20", "+", "%00"];

/// A seeded choice of `n` combinations of the pieces, plus every unit with every number.
fn generated(n: usize) -> Vec<String> {
    let mut out: Vec<String> = NUMBER
        .iter()
        .flat_map(|num| UNIT.iter().map(move |u| format!("{num}{u}")))
        .collect();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut pick = |len: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % len as u64) as usize
    };
    for _ in 0..n {
        out.push(format!(
            "{}{}{}{}{}",
            LEAD[pick(LEAD.len())],
            NUMBER[pick(NUMBER.len())],
            MIDDLE[pick(MIDDLE.len())],
            UNIT[pick(UNIT.len())],
            TRAIL[pick(TRAIL.len())]
        ));
    }
    out.sort();
    out.dedup();
    out
}

/// Every byte but unreserved ones percent-encoded (a decoded table value as query text).
fn encoded(s: &str) -> String {
    percent::encode_component(s)
}

/// How one reader answered a value: read (`Ok`), or refused with a status and the
/// reason of the root cause.
type Reading = Result<(), (u16, String)>;

fn refusal(status: u16, v: &serde_json::Value) -> Reading {
    let reason = v["error"]["root_cause"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    Err((status, reason))
}

struct Readers {
    edge: Edge,
    tenant: Tenant,
    mock: mock_es::MockEs,
    engine: engine_support::Engine,
}

impl Readers {
    fn start() -> Readers {
        let mock = mock_es::MockEs::start(mock_es::MockConfig::default());
        let mut spec = ClusterSpec::multitenant("alpha", "p");
        spec.upstream = Some(mock.addr);
        let edge = Edge::start(
            Config::new()
                .plan(PlanSpec::new("p").contexts(100_000))
                .cluster(spec),
        );
        let tenant = edge.tenant("alpha");
        let engine = engine_support::Engine::start();
        let mut c = engine.client();
        assert_eq!(c.req("PUT", "/books", None).status, 200);
        Readers {
            edge,
            tenant,
            mock,
            engine,
        }
    }

    /// The edge's answer, and the `scroll` value it forwarded when it forwarded one.
    fn through_edge(&self, value: &str) -> (Reading, Option<String>) {
        let before = self.mock.state().requests.len();
        let r = self.edge.send(
            &self
                .tenant
                .req("GET", &format!("/books/_search?scroll={value}&size=1")),
        );
        let forwarded: Vec<String> = self.mock.state().requests[before..]
            .iter()
            .filter(|q| q.path.contains("_search?"))
            .map(|q| q.path.clone())
            .collect();
        if r.status == 400 {
            assert!(
                forwarded.is_empty(),
                "{value}: refused yet forwarded {forwarded:?}"
            );
            return (refusal(r.status, &r.json()), None);
        }
        let [target] = forwarded.as_slice() else {
            panic!(
                "{value}: {} {} and forwarded {forwarded:?}",
                r.status,
                r.text()
            );
        };
        let query = target.split_once('?').map_or("", |(_, q)| q);
        let pairs = percent::decode_query(query.as_bytes())
            .expect("the edge forwards a query that decodes");
        let scroll = pairs
            .into_iter()
            .find(|(k, _)| k == "scroll")
            .map(|(_, v)| v);
        (Ok(()), scroll)
    }

    /// The engine's answer to `value` sent as query text (an opened scroll is cleared).
    fn engine(&self, value: &str) -> Reading {
        let mut c = self.engine.client();
        let r = c.req(
            "POST",
            &format!("/books/_search?scroll={value}&size=1"),
            None,
        );
        match r.status {
            200 => {
                // 404 when the scroll had expired already (a zero or negative keep-alive)
                let cleared = c.req("DELETE", "/_search/scroll/_all", None);
                assert!(matches!(cleared.status, 200 | 404), "{}", cleared.text());
                Ok(())
            }
            s => refusal(s, &r.json()),
        }
    }
}

/// The value as both readers decode it from the query.
fn decoded(value: &str) -> String {
    percent::decode_str(value.as_bytes(), Plus::Space).expect("generated values decode")
}

// issue 25 #2: the edge, the engine, and the engine again on what the edge forwarded, read
// every generated value alike
#[test]
fn edge_and_engine_read_every_generated_value_alike() {
    let r = Readers::start();
    let values = generated(400);
    let (mut read, mut refused) = (0, 0);
    for value in &values {
        let (edge, forwarded) = r.through_edge(value);
        let engine = r.engine(value);
        assert_eq!(edge, engine, "{value:?}: edge vs engine");
        if edge.is_err() {
            refused += 1;
            continue;
        }
        read += 1;
        let fwd = forwarded.unwrap_or_else(|| panic!("{value:?}: forwarded without scroll"));
        let raw = params::parse_time(&decoded(value), "scroll").unwrap();
        let canonical = params::parse_time(&fwd, "scroll").unwrap();
        assert_eq!(
            raw.nanos(),
            canonical.nanos(),
            "{value:?} forwarded as {fwd:?}"
        );
        assert_eq!(fwd, raw.to_string(), "{value:?}: not the canonical form");
        assert_eq!(r.engine(&encoded(&fwd)), Ok(()), "{value:?} -> {fwd:?}");
    }
    // both kinds are well represented
    assert!(read > 50 && refused > 50, "read {read}, refused {refused}");
}

// the edge end to end against Elasticsearch 7.10's answers (`params::table`)
#[test]
fn the_edge_answers_as_elasticsearch() {
    let r = Readers::start();
    for (value, es) in table::TIME {
        let (edge, forwarded) = r.through_edge(&encoded(value));
        match (es, &edge) {
            (Es::Reads(c), Ok(())) => {
                let fwd = forwarded.expect("forwarded with scroll");
                // the keep-alive limit is a second check: the table's reads are within it
                // or refused by it
                assert_eq!(&fwd, c, "{value:?}");
            }
            (Es::Reads(_), Err((400, why))) if why.starts_with("Keep alive for request") => {}
            (Es::Refuses(want), Err((400, why))) => {
                assert!(why.starts_with(want), "{value:?}: {why}")
            }
            (Es::Deviation(_), Err((400, _))) => {}
            _ => panic!("{value:?}: Elasticsearch {es:?}, the edge {edge:?}"),
        }
        assert_eq!(r.engine(&encoded(value)), edge, "{value:?}: the engine");
    }
    for (value, limit) in table::KEEP_ALIVE {
        let (edge, _) = r.through_edge(&encoded(value));
        match (limit, &edge) {
            (None, Ok(())) => {}
            (Some(want), Err((400, why))) => assert!(why.starts_with(want), "{value}: {why}"),
            _ => panic!("{value:?}: Elasticsearch {limit:?}, the edge {edge:?}"),
        }
        assert_eq!(r.engine(&encoded(value)), edge, "{value:?}: the engine");
    }
}
