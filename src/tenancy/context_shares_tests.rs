use std::time::{Duration, Instant};

use super::*;

const MIN: Duration = Duration::from_secs(60);

fn refused(r: Result<(), EdgeError>) -> String {
    match r {
        Err(EdgeError::Refused {
            status: 429,
            kind: "too_many_scroll_contexts_exception",
            reason,
        }) => reason,
        other => panic!("expected a 429, got {other:?}"),
    }
}

/// An upstream's limit, its clusters with their budgets, the shares expected.
type Case<'a> = (u64, &'a [(&'a str, u64)], &'a [u64]);

#[test]
fn shares_are_the_plans_when_they_fit_and_proportional_parts_when_not() {
    let cases: &[Case] = &[
        (500, &[("a", 100), ("b", 200)], &[100, 200]),
        (500, &[("a", 500)], &[500]),
        (500, &[("a", 500), ("b", 500)], &[250, 250]),
        (500, &[("a", 500), ("b", 500), ("c", 500)], &[166, 166, 166]),
        (500, &[("a", 100), ("b", 900)], &[50, 450]),
        (10, &[("a", 1), ("b", 1000)], &[0, 9]),
        (
            u64::MAX,
            &[("a", u64::MAX), ("b", u64::MAX)],
            &[u64::MAX / 2, u64::MAX / 2],
        ),
    ];
    for (limit, members, want) in cases {
        let mut l = SharedContexts::new(*limit);
        l.set_members(members.iter().copied());
        let got: Vec<u64> = members.iter().map(|(id, _)| l.share(id)).collect();
        assert_eq!(&got, want, "limit {limit}, members {members:?}");
        assert!(got.iter().map(|&s| s as u128).sum::<u128>() <= *limit as u128);
    }
}

// issue 25 #3: one cluster's scrolls over a 5-shard index count 5 each, and stop at its
// share, leaving the others' shares free: the upstream never reaches its limit.
#[test]
fn opens_count_shard_contexts_and_stop_at_the_share() {
    let now = Instant::now();
    let mut l = SharedContexts::new(500);
    l.set_members([("noisy", 500), ("quiet", 500)]);
    let mut opened = 0;
    while l.reserve("noisy", 5, now).is_ok() {
        l.opened("noisy", 5, Some((&format!("s{opened}"), Some(5))), MIN, now);
        opened += 1;
    }
    assert_eq!(opened, 50, "250 shard contexts: the share of one of two");
    let reason = refused(l.reserve("noisy", 5, now));
    assert!(reason.contains("less than or equal to: [250]"), "{reason}");
    assert!(reason.contains("Open now: [250]"), "{reason}");
    // the other cluster still has its whole share, and the total never passes the limit
    for n in 0..50 {
        l.reserve("quiet", 5, now).unwrap();
        l.opened("quiet", 5, Some((&format!("q{n}"), Some(5))), MIN, now);
    }
    assert_eq!(l.total(now), 500);
    refused(l.reserve("quiet", 1, now));
}

#[test]
fn a_reservation_becomes_the_weight_the_upstream_reported() {
    let now = Instant::now();
    let mut l = SharedContexts::new(100);
    l.set_members([("a", 10)]);
    l.reserve("a", 8, now).unwrap();
    assert_eq!(l.used("a", now), 8, "reserved while in flight");
    refused(l.reserve("a", 3, now));
    l.opened("a", 8, Some(("s1", Some(2))), MIN, now);
    assert_eq!(l.used("a", now), 2);
    // no weight reported (a point in time): the reservation stays
    l.reserve("a", 4, now).unwrap();
    l.opened("a", 4, Some(("p1", None)), MIN, now);
    assert_eq!(l.used("a", now), 6);
    // an open that failed gives its place back
    l.reserve("a", 4, now).unwrap();
    l.opened("a", 4, None, MIN, now);
    assert_eq!(l.used("a", now), 6);
    // N and N+1: 4 more fit exactly, then nothing
    l.reserve("a", 4, now).unwrap();
    refused(l.reserve("a", 1, now));
}

#[test]
fn expiry_continuation_and_close_free_places() {
    let t0 = Instant::now();
    let mut l = SharedContexts::new(100);
    l.set_members([("a", 10)]);
    l.reserve("a", 5, t0).unwrap();
    l.opened("a", 5, Some(("s1", Some(5))), Duration::from_secs(10), t0);
    l.reserve("a", 5, t0).unwrap();
    l.opened("a", 5, Some(("s2", Some(5))), Duration::from_secs(10), t0);
    // s1 continues with a new id and a longer keep-alive; s2 expires
    let t1 = t0 + Duration::from_secs(9);
    l.continued("a", &["s1".into()], Some("s1b"), Some(MIN), t1);
    let t2 = t0 + Duration::from_secs(11);
    assert_eq!(l.used("a", t2), 5);
    l.closed("a", &["s1".into()]);
    assert_eq!(l.used("a", t2), 5, "the old id is no longer held");
    l.closed("a", &["s1b".into()]);
    assert_eq!(l.used("a", t2), 0);
    // a huge keep-alive does not overflow the clock
    l.reserve("a", 1, t2).unwrap();
    l.opened("a", 1, Some(("s3", Some(1))), Duration::MAX, t2);
    assert_eq!(
        l.used("a", t2),
        0,
        "an expiry past the clock's range counts as now"
    );
}

#[test]
fn a_removed_cluster_keeps_its_contexts_counted_and_gets_no_new_ones() {
    let now = Instant::now();
    let mut l = SharedContexts::new(10);
    l.set_members([("a", 10), ("b", 10)]);
    l.reserve("a", 5, now).unwrap();
    l.opened("a", 5, Some(("s1", Some(5))), MIN, now);
    l.set_members([("b", 10)]);
    assert_eq!(l.share("a"), 0);
    refused(l.reserve("a", 1, now));
    assert_eq!(l.total(now), 5, "the upstream still holds them");
    // what the departed cluster holds is taken from the limit: b cannot push the upstream
    // past it, and gets the whole limit back once those contexts are gone
    assert_eq!(l.share("b"), 5);
    l.reserve("b", 5, now).unwrap();
    refused(l.reserve("b", 1, now));
    l.closed("a", &["s1".into()]);
    l.reserve("b", 5, now).unwrap();
    assert_eq!(l.share("b"), 10);
    assert_eq!(l.total(now), 10);
    refused(l.reserve("unknown", 1, now));
}

// issue 30: the ledger says which cluster holds an id (what confines OpenSearch's list)
#[test]
fn holds_is_per_cluster_and_expires() {
    let now = Instant::now();
    let mut l = SharedContexts::new(10);
    l.set_members([("a", 5)]);
    l.reserve("a", 1, now).unwrap();
    l.opened("a", 1, Some(("id-a", None)), Duration::from_secs(60), now);
    assert!(l.holds("a", "id-a", now));
    assert!(!l.holds("b", "id-a", now));
    assert!(!l.holds("a", "id-b", now));
    assert!(!l.holds("a", "id-a", now + Duration::from_secs(61)));
}

/// Opens one context of `weight` for `cluster` at `now`, under `id`.
fn open(l: &mut SharedContexts, cluster: &str, id: &str, weight: u64, now: Instant) {
    l.reserve(cluster, weight, now).expect("fits");
    l.opened(cluster, weight, Some((id, Some(weight))), MIN, now);
}

// Issue 27: readings of the upstream's count bring in what the ledger did not see (a
// previous home's contexts, or this process's before a restart): the first reading and a
// takeover's set the unexplained part, later ones only lower it; what opened while a
// reading was on the wire is never counted twice past the next reading.
#[test]
fn readings_count_contexts_the_ledger_did_not_see() {
    let now = Instant::now();
    let mut l = SharedContexts::new(500);
    l.set_members([("a", 6)]);
    // First reading: 4 contexts upstream, 2 of them this ledger's.
    open(&mut l, "a", "s1", 2, now);
    assert!(l.wants_reading("a"), "never read");
    let r = l.begin_reading();
    l.record_reading("a", r, 4, false, now);
    assert_eq!(l.used("a", now), 4);
    refused(l.reserve("a", 3, now));
    // An open answered while a reading was on the wire (the count may miss it or not).
    let r = l.begin_reading();
    open(&mut l, "a", "s2", 1, now);
    l.record_reading("a", r, 5, false, now); // it saw s2: unexplained 5 - 2 = 3 > 2: kept at 2
    assert_eq!(l.used("a", now), 5);
    // Later readings only lower: the previous home's contexts expired upstream.
    let r = l.begin_reading();
    l.record_reading("a", r, 3, false, now);
    assert_eq!(l.used("a", now), 3, "s1 and s2 only");
    assert!(
        !l.wants_reading("a"),
        "nothing left to lower: no more readings"
    );
    let r = l.begin_reading();
    l.record_reading("a", r, 9, false, now);
    assert_eq!(l.used("a", now), 3, "a periodic reading never raises");
    // A takeover's reading trusts the count: entries from before it are dropped (another
    // home may have closed them), what opened after it began stays.
    let r = l.begin_reading();
    open(&mut l, "a", "s3", 1, now);
    l.record_reading("a", r, 4, true, now);
    assert_eq!(l.used("a", now), 5, "4 counted + s3 opened since");
    l.closed("a", &["s1".into()]);
    assert_eq!(l.used("a", now), 5, "s1 is part of the count now");
    l.closed("a", &["s3".into()]);
    assert_eq!(l.used("a", now), 4);
    // A cluster no longer placed here forgets what it was never seen to hold.
    l.set_member("a", 0);
    assert_eq!(l.used("a", now), 0);
}
