//! Rows of the table for query parameters (`params.rs`): pass, check, open or refuse, and
//! the query string split and decoded as the upstream does.

use super::*;

fn q(query: &str) -> Result<(String, params::QueryFacts), EdgeError> {
    let p = prefix();
    let s = sealer();
    let t = Tenant {
        prefix: &p,
        ids: Some((&s, "acme")),
        now_ms: 0,
    };
    let mut out = Vec::new();
    let facts = params::read_query(&t, Some(query.as_bytes()), "/books/_search", &mut out)?;
    Ok((show(&out), facts))
}

/// Every query string of `rows` is refused with 400, an `illegal_argument_exception` whose
/// reason holds the row's words.
fn assert_refused(rows: &[(&str, &str)]) {
    for (input, why) in rows {
        let e = q(input).unwrap_err();
        assert_eq!(e.status(), 400, "{input}");
        assert!(
            e.body().reason.contains(why),
            "{input}: {:?}",
            e.body().reason
        );
        assert_eq!(e.body().kind, "illegal_argument_exception", "{input}");
    }
}

#[test]
fn query_parameters() {
    let table: &[(&str, &str)] = &[
        ("q=title:rust&size=10", "?q=title:rust&size=10"),
        ("q=a+b&df=title", "?q=a%20b&df=title"),
        ("pretty&v", "?pretty&v=true"),
        // issue 25: the values the edge acts on go out in canonical form
        ("v=%20&help=false", "?help=false"),
        ("scroll=1%20h&size=2", "?scroll=1h&size=2"),
        ("scroll=+1H", "?scroll=1h"),
        ("keep_alive=0", "?keep_alive=0ms"),
        (
            "timeout=-1&master_timeout=30S",
            "?timeout=-1&master_timeout=30s",
        ),
        ("wait_for_completion=", "?wait_for_completion=true"),
        ("sort=n%3Adesc,_score", "?sort=n:desc,_score"),
        ("scroll=1m&&size=2", "?scroll=1m&size=2"),
        (
            "filter_path=hits.hits._index",
            "?filter_path=hits.hits._index",
        ),
        ("q=%22x%20y%22", "?q=%22x%20y%22"),
        (
            "format=json&bytes=b&h=index",
            "?format=json&bytes=b&h=index",
        ),
        ("wait_for_completion=true", "?wait_for_completion=true"),
        ("", ""),
    ];
    for (input, want) in table {
        assert_eq!(q(input).map(|r| r.0).as_deref(), Ok(*want), "{input}");
    }
    assert!(q("scroll=1m").unwrap().1.scroll);
    assert!(q("v").unwrap().1.verbose);
    // `v=%20` leaves the default (no header row) upstream: the edge must not take the
    // first row for one
    assert!(!q("v=%20").unwrap().1.verbose);
    let refused: &[(&str, &str)] = &[
        (
            "foo=1",
            "request [/books/_search] contains unrecognized parameter: [foo]",
        ),
        ("size=1&size=2", "more than once"),
        ("siz%65=1&size=2", "more than once"),
        ("source={}", "[source]"),
        ("pipeline=p", "[pipeline]"),
        ("index=other", "[index]"),
        ("name=x", "[name]"),
        ("q=_index:abc*", "[_index]"),
        ("q=%5C_index:a", "[_index]"),
        ("q=_index+:a", "[_index]"),
        ("df=_index", "[_index]"),
        ("sort=_index:asc", "sort on [_index]"),
        ("format=yaml", "formats"),
        ("wait_for_completion=false", "wait_for_completion=false"),
        (
            "v=yes",
            "Failed to parse value [yes] as only [true] or [false] are allowed.",
        ),
        ("scroll=1.5h", "fractional time values are not supported"),
        ("scroll=1M", "unit is missing or unrecognized"),
        (
            "timeout=abc",
            "failed to parse setting [timeout] with value [abc]",
        ),
        ("q=%zz", "invalid escape sequence"),
        ("q=%ff", "UTF-8"),
    ];
    assert_refused(refused);
    // issue 25 #1: keep-alives past `search.max_keep_alive`, as Elasticsearch's shards
    // refuse them
    for (input, why) in [
        (
            "scroll=150000000000000d",
            "Keep alive for request (106751.9d) is too large.",
        ),
        (
            "keep_alive=25h",
            "Keep alive for request (1d) is too large.",
        ),
    ] {
        let b = q(input).unwrap_err().body();
        assert_eq!(
            (b.status, b.kind.as_str()),
            (400, "search_phase_execution_exception")
        );
        assert!(b.caused_by.unwrap().1.starts_with(why), "{input}");
    }
    let tok = sealer().seal("acme", IdKind::Scroll, b"RAW/+=");
    assert_eq!(
        q(&format!("scroll_id={tok}")).unwrap().0,
        "?scroll_id=RAW/%2B%3D"
    );
    assert_eq!(q("scroll_id=RAW").unwrap_err().status(), 404);
}

/// attacks-10 #2 (issue 10 §1: one reading of the query string): Elasticsearch's
/// `RestUtils.decodeQueryString` ends a parameter at `;` as at `&`, so `df=_index;` is
/// `df=_index` upstream. The edge splits where the upstream splits and writes `;` encoded.
#[test]
fn semicolons_separate_parameters_as_upstream() {
    let refused: &[(&str, &str)] = &[
        ("size=0&q=a*&df=_index;", "[_index]"),
        ("q=a*;df=_index", "[_index]"),
        ("sort=_index;", "sort on [_index]"),
        ("sort=_index;&size=1", "sort on [_index]"),
        ("df=title;df=_index", "more than once"),
        ("size=1;size=2", "more than once"),
        ("q=a*;source={}", "[source]"),
        ("x;df=title", "unrecognized parameter: [x]"),
        ("format=json;format=yaml", "more than once"),
    ];
    assert_refused(refused);
    let table: &[(&str, &str)] = &[
        // a `;` the tenant encoded is data: it goes upstream encoded
        ("q=a%3Bb", "?q=a%3Bb"),
        ("df=title%3B", "?df=title%3B"),
        ("size=1;pretty", "?size=1&pretty"),
        ("size=1;;from=2", "?size=1&from=2"),
        ("q=a%26b%3Dc%2Bd%23e%25", "?q=a%26b%3Dc%2Bd%23e%25"),
    ];
    for (input, want) in table {
        assert_eq!(q(input).map(|r| r.0).as_deref(), Ok(*want), "{input}");
    }
}

/// attacks-10 #3: `format` wins over `Accept` upstream and its short names are matched
/// without regard to case (`XContentType.fromMediaTypeOrFormat`): only `json` and the
/// text formats of `_cat` pass.
#[test]
fn format_parameter_is_json_or_text() {
    for bad in [
        "yaml",
        "YAML",
        "Yaml",
        "smile",
        "SMILE",
        "cbor",
        "application/yaml",
        "application/json;x",
        "Json",
    ] {
        let e = q(&format!("format={bad}")).unwrap_err();
        assert_eq!(e.status(), 400, "{bad}");
    }
    for ok in ["json", "JSON", "txt", "text", ""] {
        assert!(q(&format!("format={ok}")).is_ok(), "{ok}");
    }
}

/// `filter_path` keeps the response keys its patterns match, and `_mapping`, `_settings`,
/// `_alias`, `_stats` (`indices.<name>`), `_segments`, ... key their answers by the upstream's
/// index names, `<P>` included: `GET /books/_settings?filter_path=a*` answered `{}` or the
/// settings, whether the prefix starts with `a` (Elasticsearch 7.10 and the engine alike; a
/// `-a*` exclusion too). A segment with a `*` is therefore accepted only when it is nothing
/// but stars (`*`, `**`: they match every key whatever it holds); literal segments pass, since
/// matching `<P>books` literally needs the prefix already (attack18).
#[test]
fn filter_path_patterns_cannot_probe_index_names() {
    for ok in [
        "filter_path=hits.hits._source",
        "filter_path=*.mappings",
        "filter_path=**.number_of_shards",
        "filter_path=-**._shards,took",
        "filter_path=aggregations.*.buckets.key",
        "filter_path=***.x",
    ] {
        assert!(q(ok).is_ok(), "{ok}: {:?}", q(ok));
    }
    assert_refused(&[
        ("filter_path=a*", "filter_path"),
        ("filter_path=*.mappings,-a*", "filter_path"),
        ("filter_path=indices.ab*.total", "filter_path"),
        ("filter_path=%20a*", "filter_path"),
        ("filter_path=*z-books", "filter_path"),
        ("filter_path=x.*a*", "filter_path"),
        ("filter_path=a\\.*", "filter_path"),
        ("filter_path=hits.hits._sour*", "filter_path"),
    ]);
}
