//! Tests of response un-rewriting (spec 2.3, 4, 7; issue 5).

use super::*;
use crate::tenancy::prefix::TenancyKey;

fn tenants() -> (Prefix, Prefix) {
    let k = TenancyKey::from_bytes([5; 32]);
    (Prefix::derive(&k, "alpha"), Prefix::derive(&k, "beta"))
}

fn plan(kind: ResponseKind, verbose: bool) -> ResponsePlan {
    ResponsePlan {
        kind,
        verbose,
        help: false,
        ids: None,
    }
}

fn run(rw: impl Fn() -> ResponseRewriter, chunks: &[&[u8]]) -> String {
    let mut r = rw();
    let mut out = Vec::new();
    for c in chunks {
        r.feed(c, &mut out);
    }
    r.finish(&mut out);
    String::from_utf8(out).unwrap()
}

/// The one-shot output, checked equal at every split point.
fn all_splits(rw: impl Fn() -> ResponseRewriter, body: &str) -> String {
    let b = body.as_bytes();
    let whole = run(&rw, &[b]);
    for i in 0..=b.len() {
        assert_eq!(run(&rw, &[&b[..i], &b[i..]]), whole, "split at {i}");
    }
    let bytes: Vec<&[u8]> = b.chunks(1).collect();
    assert_eq!(run(&rw, &bytes), whole);
    whole
}

/// A `_cat` text table padded as Elasticsearch pads it (left-aligned, one space between).
fn table(header: Option<&[&str]>, rows: &[Vec<String>]) -> String {
    table_aligned(header, rows, &[])
}

/// Like [`table`], with the columns flagged in `right` right-aligned (numbers).
fn table_aligned(header: Option<&[&str]>, rows: &[Vec<String>], right: &[usize]) -> String {
    let mut all: Vec<Vec<String>> = Vec::new();
    if let Some(h) = header {
        all.push(h.iter().map(|s| s.to_string()).collect());
    }
    all.extend(rows.iter().cloned());
    let cols = all.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|c| all.iter().map(|r| r[c].len()).max().unwrap())
        .collect();
    let mut s = String::new();
    for r in &all {
        for (c, cell) in r.iter().enumerate() {
            let pad = " ".repeat(widths[c] - cell.len());
            if right.contains(&c) {
                s.push_str(&pad);
                s.push_str(cell);
            } else {
                s.push_str(cell);
                if c + 1 < cols {
                    s.push_str(&pad);
                }
            }
            if c + 1 < cols {
                s.push(' ');
            }
        }
        s.push('\n');
    }
    s
}

fn row(health: &str, index: &str, docs: &str) -> Vec<String> {
    vec![
        health.into(),
        "open".into(),
        index.into(),
        "1".into(),
        "1".into(),
        docs.into(),
    ]
}

const HEADER: &[&str] = &["health", "status", "index", "pri", "rep", "docs.count"];

// spec 2.3: the upstream's table of the tenant's indices, as if the tenant were alone
#[test]
fn cat_indices_text_as_if_alone() {
    let (a, _) = tenants();
    let pa = a.as_str();
    for verbose in [false, true] {
        let header = verbose.then_some(HEADER);
        let names = ["books", "logstash-2024.01.01", "x"];
        let upstream: Vec<_> = names
            .iter()
            .map(|n| row("green", &format!("{pa}{n}"), "10"))
            .collect();
        let alone: Vec<_> = names.iter().map(|n| row("green", n, "10")).collect();
        let rw = || {
            ResponseRewriter::new(
                a,
                plan(ResponseKind::CatRows, verbose),
                200,
                Some(b"text/plain; charset=UTF-8"),
                None,
            )
        };
        assert_eq!(
            all_splits(rw, &table(header, &upstream)),
            table(header, &alone),
            "verbose={verbose}"
        );
    }
}

fn words(s: &str) -> Vec<Vec<&str>> {
    s.lines().map(|l| l.split_whitespace().collect()).collect()
}

// Defence in depth: rows of other tenants (and unprefixed rows) never shown
#[test]
fn cat_indices_text_drops_other_rows() {
    let (a, b) = tenants();
    let (pa, pb) = (a.as_str(), b.as_str());
    let upstream = table(
        Some(HEADER),
        &[
            row("green", &format!("{pa}books"), "10"),
            row("yellow", &format!("{pb}secret"), "99"),
            row("green", &format!("{pa}logstash-2024.01.01"), "7"),
            row("green", "unprefixed", "1"),
        ],
    );
    let want = table(
        Some(HEADER),
        &[
            row("green", "books", "10"),
            row("green", "logstash-2024.01.01", "7"),
        ],
    );
    let rw = || {
        ResponseRewriter::new(
            a,
            plan(ResponseKind::CatRows, true),
            200,
            Some(b"text/plain"),
            None,
        )
    };
    let got = all_splits(rw, &upstream);
    assert_eq!(words(&got), words(&want));
    assert!(
        !got.contains(pb)
            && !got.contains("secret")
            && !got.contains("unprefixed")
            && !got.contains(pa)
    );
}

#[test]
fn cat_text_header_with_no_rows_and_short_names() {
    let (a, _) = tenants();
    let pa = a.as_str();
    let rw = || ResponseRewriter::new(a, plan(ResponseKind::CatRows, true), 200, None, None);
    let empty = table(Some(HEADER), &[]);
    assert_eq!(all_splits(rw, &empty), empty);
    let upstream = table(Some(HEADER), &[row("green", &format!("{pa}x"), "1")]);
    let want = table(Some(HEADER), &[row("green", "x", "1")]);
    assert_eq!(all_splits(rw, &upstream), want);
    // the index as last column
    let upstream = table(
        Some(&["docs.count", "index"]),
        &[vec!["1".into(), format!("{pa}abc")]],
    );
    let want = table(
        Some(&["docs.count", "index"]),
        &[vec!["1".into(), "abc".into()]],
    );
    assert_eq!(all_splits(rw, &upstream), want);
}

// `_cat/shards`: a right-aligned number follows the index column
#[test]
fn cat_shards_right_aligned_neighbour() {
    let (a, _) = tenants();
    let pa = a.as_str();
    let h: &[&str] = &["index", "shard", "prirep", "state", "docs"];
    let r = |i: &str, s: &str, d: &str| {
        vec![
            i.to_string(),
            s.into(),
            "p".into(),
            "STARTED".into(),
            d.into(),
        ]
    };
    let upstream = table_aligned(
        Some(h),
        &[
            r(&format!("{pa}books"), "0", "12"),
            r(&format!("{pa}b"), "10", "3"),
        ],
        &[1, 4],
    );
    let alone = table_aligned(
        Some(h),
        &[r("books", "0", "12"), r("b", "10", "3")],
        &[1, 4],
    );
    let rw = || {
        ResponseRewriter::new(
            a,
            plan(ResponseKind::CatRows, true),
            200,
            Some(b"text/plain"),
            None,
        )
    };
    assert_eq!(all_splits(rw, &upstream), alone);
}

#[test]
fn cat_aliases_two_prefixed_columns() {
    let (a, b) = tenants();
    let (pa, pb) = (a.as_str(), b.as_str());
    let h: &[&str] = &["alias", "index", "filter"];
    let upstream = table(
        Some(h),
        &[
            vec![format!("{pa}al"), format!("{pa}books"), "-".into()],
            vec![format!("{pb}al"), format!("{pb}books"), "-".into()],
        ],
    );
    let want = table(Some(h), &[vec!["al".into(), "books".into(), "-".into()]]);
    let rw = || {
        ResponseRewriter::new(
            a,
            plan(ResponseKind::CatRows, true),
            200,
            Some(b"text/plain"),
            None,
        )
    };
    assert_eq!(all_splits(rw, &upstream), want);
}

// format=json: rows filtered and stripped
#[test]
fn cat_indices_json() {
    let (a, b) = tenants();
    let (pa, pb) = (a.as_str(), b.as_str());
    let upstream = format!(
        "[{{\"health\":\"green\",\"index\":\"{pa}books\",\"docs.count\":\"10\"}},\
         {{\"health\":\"green\",\"index\":\"{pb}secret\",\"docs.count\":\"9\"}},\
         {{\"health\":\"green\",\"index\":\"{pa}x\\\"y\",\"docs.count\":null}}]"
    );
    let rw = || {
        ResponseRewriter::new(
            a,
            plan(ResponseKind::CatRows, false),
            200,
            Some(b"application/json"),
            None,
        )
    };
    let got = all_splits(rw, &upstream);
    assert_eq!(
        got,
        "[{\"health\":\"green\",\"index\":\"books\",\"docs.count\":\"10\"},\
          {\"health\":\"green\",\"index\":\"x\\\"y\",\"docs.count\":null}]"
    );
    let v: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    // pretty printed, first row another tenant's, empty table
    let pretty = format!(
        "[\n  {{\n    \"index\" : \"{pb}s\"\n  }},\n  {{\n    \"index\" : \"{pa}b\"\n  }}\n]\n"
    );
    assert_eq!(all_splits(rw, &pretty), "[{\n    \"index\" : \"b\"\n  }]\n");
    assert_eq!(all_splits(rw, "[ ]"), "[]");
    assert_eq!(all_splits(rw, "[\"x\",\"y\"]"), "[]");
}

// spec 7: error bodies name the index as the tenant wrote it
#[test]
fn errors_and_other_bodies_are_stripped() {
    let (a, _) = tenants();
    let pa = a.as_str();
    let err = crate::errors::ErrorBody::index_not_found(&format!("{pa}books")).to_bytes();
    let err = String::from_utf8(err).unwrap();
    let want =
        String::from_utf8(crate::errors::ErrorBody::index_not_found("books").to_bytes()).unwrap();
    for kind in [ResponseKind::Strip, ResponseKind::CatRows] {
        for ct in [Some(&b"application/json"[..]), None] {
            let rw = || ResponseRewriter::new(a, plan(kind, true), 404, ct, None);
            assert_eq!(all_splits(rw, &err), want);
        }
    }
    let search = format!("{{\"hits\":{{\"hits\":[{{\"_index\":\"{pa}books\",\"_id\":\"1\"}}]}},\"aggregations\":{{\"i\":{{\"buckets\":[{{\"key\":\"{pa}books\"}}]}}}}}}");
    let rw = || {
        ResponseRewriter::new(
            a,
            plan(ResponseKind::Strip, false),
            200,
            Some(b"application/json"),
            None,
        )
    };
    let got = all_splits(rw, &search);
    assert!(!got.contains(pa));
    assert!(got.contains("\"_index\":\"books\"") && got.contains("\"key\":\"books\""));
    // a JSON error to a cat request passes through the stripper
    let rw = || {
        ResponseRewriter::new(
            a,
            plan(ResponseKind::CatRows, false),
            200,
            Some(b"application/json"),
            None,
        )
    };
    let obj = format!("{{\"error\":\"{pa}x\"}}");
    assert_eq!(all_splits(rw, &obj), "{\"error\":\"x\"}");
}

#[test]
fn help_tables_are_not_filtered() {
    let (a, _) = tenants();
    let help = "health | h | current health status\nindex | i,idx | index name\n";
    let p = ResponsePlan {
        kind: ResponseKind::CatRows,
        verbose: false,
        help: true,
        ids: None,
    };
    let rw = || ResponseRewriter::new(a, p, 200, Some(b"text/plain"), None);
    assert_eq!(all_splits(rw, help), help);
}

/// attacks-10 #3: where ids are sealed, a response the upstream wrote in another media
/// type than JSON is refused before the head (`check_upstream`: 502) and, by the filter,
/// never released.
#[test]
fn non_json_responses_where_ids_are_sealed() {
    let (a, _) = tenants();
    let ids = |fields| ResponsePlan {
        ids: Some(fields),
        ..plan(ResponseKind::Search, false)
    };
    for (fields, ct) in [
        (IdFields::Search, "application/yaml"),
        (IdFields::Search, "application/smile"),
        (IdFields::Search, "application/cbor"),
        (
            IdFields::Search,
            "application/vnd.elasticsearch+yaml;compatible-with=8",
        ),
        (IdFields::PitOpen, "text/plain; charset=UTF-8"),
        (IdFields::PitOpen, "application/x-ndjson"),
        (IdFields::PitOpen, "garbage"),
    ] {
        let e = ids(fields).check_upstream(Some(ct.as_bytes())).unwrap_err();
        assert_eq!(e.status(), 502, "{ct}");
        let sealer = Arc::new(IdSealer::new(&TenancyKey::from_bytes([9; 32])));
        let body = b"{\"id\":\"RAWPIT\",\"_scroll_id\":\"RAWSCROLL\"}";
        let out = run(
            || {
                ResponseRewriter::new(
                    a,
                    ids(fields),
                    200,
                    Some(ct.as_bytes()),
                    Some((sealer.clone(), Arc::from("alpha"))),
                )
            },
            &[body],
        );
        assert!(!out.contains("RAW"), "{ct}: {out}");
        assert!(out.contains("\"status\":502"), "{ct}: {out}");
    }
    for ct in [
        Some("application/json; charset=UTF-8"),
        Some("application/vnd.elasticsearch+json;compatible-with=8"),
        None,
    ] {
        assert!(ids(IdFields::Search)
            .check_upstream(ct.map(str::as_bytes))
            .is_ok());
    }
    // without ids to seal, other media types are only stripped
    let p = plan(ResponseKind::Strip, false);
    assert!(p.check_upstream(Some(b"text/plain")).is_ok());
}

/// Issue 30 (OpenSearch's point in time on the multitenant class): a list of points in
/// time keeps only the cluster's own entries, their ids sealed; a body the filter cannot
/// read, or a list without an owner, is never released (spec 2.3: nothing of another
/// tenant).
#[test]
fn pit_lists_keep_only_the_clusters_own_sealed() {
    use crate::tenancy::ids::IdSealer;
    use crate::tenancy::IdKind;
    let (a, _) = tenants();
    let sealer = Arc::new(IdSealer::new(&TenancyKey::from_bytes([5; 32])));
    let mut p = plan(ResponseKind::PitList, false);
    p.ids = Some(IdFields::PitList);
    let body = r#"{"pits":[{"pit_id":"MINE","creation_time":1,"keep_alive":60000},{"pit_id":"THEIRS","creation_time":2,"keep_alive":60000}]}"#;
    let rw = |owner: bool| {
        let mut r = ResponseRewriter::new(
            a,
            p,
            200,
            Some(b"application/json"),
            Some((sealer.clone(), Arc::from("c1"))),
        );
        if owner {
            r.set_pit_owner(Arc::new(|id: &str| id == "MINE"));
        }
        r
    };
    let out = all_splits(|| rw(true), body);
    assert!(!out.contains("THEIRS") && !out.contains("MINE"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let pits = v["pits"].as_array().unwrap();
    assert_eq!(pits.len(), 1, "{out}");
    let token = pits[0]["pit_id"].as_str().unwrap();
    assert_eq!(
        sealer.open("c1", IdKind::Pit, token).as_deref(),
        Some("MINE")
    );
    assert_eq!(pits[0]["keep_alive"], 60000);
    // no owner, or a body of another shape: the 502 body, no id
    for (owner, body) in [
        (false, body),
        (true, r#"{"pits":"MINE"}"#),
        (true, r#"[{"pit_id":"MINE"}]"#),
        (true, r#"{"pits":[{"pit_id":"MINE"}"#),
    ] {
        let out = run(|| rw(owner), &[body.as_bytes()]);
        assert!(
            !out.contains("MINE") && out.contains("bad_gateway_exception"),
            "{out}"
        );
    }
    // errors are only stripped
    let e = run(
        || ResponseRewriter::new(a, p, 400, Some(b"application/json"), None),
        &[br#"{"error":{"type":"x"},"status":400}"#],
    );
    assert!(e.contains("\"status\":400"), "{e}");
}
