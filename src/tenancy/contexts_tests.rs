use std::time::{Duration, Instant};

use super::*;

const S: Duration = Duration::from_secs(1);

#[test]
fn the_budget_at_n_and_n_plus_one() {
    let b = ContextBudget { limit: 3 };
    assert!(b.decide(0).is_ok());
    assert!(b.decide(2).is_ok());
    let e = b.decide(3).unwrap_err();
    assert_eq!(e.status(), 429);
    let body = e.body();
    assert_eq!(body.kind, "too_many_scroll_contexts_exception");
    assert!(body.reason.contains("[3]") && body.reason.contains("Open now: [3]"));
    assert!(ContextBudget { limit: 0 }.decide(0).is_err());
}

// issue 25 #2: the ledger reads keep-alives with the engine's reader (`params`), so
// `1 h` and `+1h` are an hour to both; negative values are expired at once
#[test]
fn time_values_as_elasticsearch_reads_them() {
    for (text, want) in [
        ("1m", Some(60 * S)),
        ("30s", Some(30 * S)),
        ("500ms", Some(Duration::from_millis(500))),
        ("1 h", Some(3600 * S)),
        (" 1h", Some(3600 * S)),
        ("2d", Some(2 * 86400 * S)),
        ("10micros", Some(Duration::from_micros(10))),
        ("7nanos", Some(Duration::from_nanos(7))),
        (" 5m", Some(300 * S)),
        ("0s", Some(Duration::ZERO)),
        ("-1", Some(Duration::ZERO)),
        ("-1m", Some(Duration::ZERO)),
        ("1.5h", None),
        (" 5m ", None),
        ("5", None),
        ("m", None),
        ("5x", None),
        ("", None),
        ("1e3s", None),
    ] {
        assert_eq!(parse_time(text), want, "{text:?}");
    }
}

// issue 25 #1: a keep-alive past the clock's range never panics the ledger
#[test]
fn huge_keep_alives_never_overflow_the_clock() {
    let now = Instant::now();
    let mut c = OpenContexts::default();
    let budget = ContextBudget { limit: 10 };
    c.reserve(budget, now).unwrap();
    let huge = parse_time("150000000000000d").unwrap();
    c.opened(Some("up1"), huge, now);
    c.continued(&["up1".into()], None, Some(Duration::MAX), now);
    c.reserve(budget, now).unwrap();
    c.opened(Some("up2"), Duration::MAX, now);
    assert_eq!(c.count(now), 2);
    // held at most `search.max_keep_alive`
    assert_eq!(c.count(now + 86_401 * S), 0);
}

#[test]
fn ids_and_keep_alive_from_what_is_forwarded() {
    let rows: &[(&str, &str, &[&str], Option<Duration>)] = &[
        ("/p-*/_search?scroll=1m&size=2", "", &[], Some(60 * S)),
        ("/p-books/_pit?keep_alive=2m", "", &[], Some(120 * S)),
        (
            "/_search/scroll",
            r#"{"scroll":"30s","scroll_id":"up1"}"#,
            &["up1"],
            Some(30 * S),
        ),
        (
            "/_search/scroll?scroll_id=up%2B1&scroll=1m",
            "",
            &["up+1"],
            Some(60 * S),
        ),
        ("/_search/scroll/a1,b2", "", &["a1", "b2"], None),
        (
            "/_search/scroll",
            r#"{"scroll_id":["a1","b2"]}"#,
            &["a1", "b2"],
            None,
        ),
        ("/_pit", r#"{"id":"pit1"}"#, &["pit1"], None),
        (
            "/_search",
            r#"{"pit":{"id":"pit1","keep_alive":"1m"},"size":1}"#,
            &["pit1"],
            Some(60 * S),
        ),
        ("/p-*/_search", r#"{"query":{"match_all":{}}}"#, &[], None),
        ("/p-*/_search", "not json", &[], None),
    ];
    for (target, body, ids, keep) in rows {
        let got = read_context_request(target.as_bytes(), body.as_bytes());
        let want = ContextRequest {
            ids: ids.iter().map(|s| s.to_string()).collect(),
            keep_alive: *keep,
        };
        assert_eq!(got, want, "{target} {body}");
    }
}

#[test]
fn opens_reserve_then_count_until_closed_or_expired() {
    let t0 = Instant::now();
    let b = ContextBudget { limit: 2 };
    let mut c = OpenContexts::default();
    c.reserve(b, t0).unwrap();
    c.reserve(b, t0).unwrap();
    // two opens in flight: a third is refused before either is answered
    assert_eq!(c.reserve(b, t0).unwrap_err().status(), 429);
    c.opened(Some("s1"), 60 * S, t0);
    c.opened(None, 60 * S, t0); // the second failed: its place comes back
    assert_eq!(c.count(t0), 1);
    c.reserve(b, t0).unwrap();
    c.opened(Some("s2"), 10 * S, t0);
    assert_eq!(c.count(t0), 2);
    assert!(c.reserve(b, t0).is_err());
    // s2 expires at t0 + 10s, s1 at t0 + 60s
    assert_eq!(c.count(t0 + 10 * S), 1);
    c.reserve(b, t0 + 10 * S).unwrap();
    c.opened(Some("s3"), 60 * S, t0 + 10 * S);
    c.closed(&["s1".to_string(), "unknown".to_string()]);
    assert_eq!(c.count(t0 + 11 * S), 1);
    c.closed(&["s3".to_string()]);
    assert_eq!(c.count(t0 + 11 * S), 0);
}

#[test]
fn continuations_renew_and_follow_a_changed_id() {
    let t0 = Instant::now();
    let b = ContextBudget { limit: 5 };
    let mut c = OpenContexts::default();
    c.reserve(b, t0).unwrap();
    c.opened(Some("pit1"), 60 * S, t0);
    // used at 50s without a keep-alive: its own keep-alive restarts
    c.continued(&["pit1".into()], Some("pit1"), None, t0 + 50 * S);
    assert_eq!(c.count(t0 + 100 * S), 1);
    assert_eq!(c.count(t0 + 110 * S), 0);
    c.reserve(b, t0).unwrap();
    c.opened(Some("pit2"), 60 * S, t0);
    // the response carries a new id: it replaces the old one, with the new keep-alive
    c.continued(&["pit2".into()], Some("pit3"), Some(5 * S), t0 + S);
    assert_eq!(c.count(t0 + 2 * S), 1);
    c.closed(&["pit2".into()]);
    assert_eq!(c.count(t0 + 2 * S), 1, "the old id is gone already");
    assert_eq!(c.count(t0 + 6 * S), 0);
    // an id the ledger never held (expired, or opened elsewhere) is not counted
    c.continued(&["other".into()], Some("other"), Some(60 * S), t0);
    assert_eq!(c.count(t0), 0);
}

// issue 30: OpenSearch's close (`{"pit_id": id or [ids]}`) names the ids the ledger drops
#[test]
fn opensearch_pit_ids_are_read_from_a_close() {
    let got = read_context_request(b"/_search/point_in_time", br#"{"pit_id":["a","b"]}"#);
    assert_eq!(got.ids, vec!["a".to_string(), "b".to_string()]);
    let got = read_context_request(b"/_search/point_in_time", br#"{"pit_id":"a"}"#);
    assert_eq!(got.ids, vec!["a".to_string()]);
    let got = read_context_request(b"/x/_search/point_in_time?keep_alive=2m", b"");
    assert_eq!(got.keep_alive, Some(120 * S));
}
