//! The readers against Elasticsearch 7.10's answers (`table`), the limits at N and N+1,
//! and the canonical forms reading back as the same value.

use super::table::{Es, BOOLEAN, BYTES, KEEP_ALIVE, LISTS, TIME, WINDOW};
use super::*;

fn check<T, F, W>(rows: &[(&str, Es)], read: F, write: W)
where
    F: Fn(&str) -> Result<T, ParamError>,
    W: Fn(&T) -> String,
{
    for (value, es) in rows {
        let got = read(value);
        match (es, &got) {
            (Es::Reads(want), Ok(v)) => assert_eq!(&write(v), want, "value {value:?}"),
            (Es::Refuses(want), Err(e)) => {
                assert!(e.reason.starts_with(want), "value {value:?}: {e:?}")
            }
            (Es::Deviation(_), Err(_)) => {}
            _ => panic!(
                "value {value:?}: expected {es:?}, got {:?}",
                got.map(|v| write(&v))
            ),
        }
    }
}

#[test]
fn time_values_as_elasticsearch_reads_them() {
    check(TIME, |v| parse_time(v, "scroll"), |t| t.to_string());
}

#[test]
fn time_canonical_forms_read_back_the_same() {
    for (value, es) in TIME {
        if let Es::Reads(canonical) = es {
            let first = parse_time(value, "scroll").unwrap();
            let again = parse_time(canonical, "scroll").unwrap();
            assert_eq!(first.nanos(), again.nanos(), "{value:?} -> {canonical:?}");
            assert_eq!(again.to_string(), *canonical);
        }
    }
}

#[test]
fn keep_alive_limit_at_n_and_n_plus_one() {
    for (value, want) in KEEP_ALIVE {
        let t = parse_time(value, "scroll").unwrap();
        match (check_keep_alive(&t, &MAX_KEEP_ALIVE), want) {
            (Ok(()), None) => {}
            (Err(e), Some(w)) => {
                assert!(e.reason.starts_with(w), "{value}: {}", e.reason);
                let b = e.body().to_value();
                assert_eq!(b["status"], 400);
                assert_eq!(b["error"]["type"], "search_phase_execution_exception");
                assert_eq!(
                    b["error"]["root_cause"][0]["type"],
                    "illegal_argument_exception"
                );
                assert_eq!(b["error"]["caused_by"]["reason"], e.reason.as_str());
            }
            (got, _) => panic!("{value}: {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn conversions_saturate_as_java_time_unit() {
    let t = parse_time("150000000000000d", "scroll").unwrap();
    assert_eq!(t.millis(), i64::MAX);
    assert_eq!(t.nanos(), i64::MAX);
    assert_eq!(
        t.to_duration(),
        std::time::Duration::from_nanos(i64::MAX as u64)
    );
    let t = parse_time("-9223372036854775808d", "scroll").unwrap();
    assert_eq!(t.millis(), i64::MIN);
    assert_eq!(t.to_duration(), std::time::Duration::ZERO);
    assert_eq!(parse_time("1500micros", "t").unwrap().millis(), 1);
    assert_eq!(parse_time("-1500micros", "t").unwrap().millis(), -1);
    assert_eq!(parse_time("999999nanos", "t").unwrap().millis(), 0);
}

#[test]
fn human_form_is_elasticsearch_to_string() {
    for (value, human) in [
        ("1d", "1d"),
        ("36h", "1.5d"),
        ("90m", "1.5h"),
        ("1500ms", "1.5s"),
        ("1050ms", "1s"),
        ("0s", "0s"),
        ("-5m", "-5"),
        ("999nanos", "999nanos"),
        ("1001micros", "1ms"),
        ("150000000000000d", "106751.9d"),
    ] {
        assert_eq!(parse_time(value, "t").unwrap().human(), human, "{value}");
    }
}

#[test]
fn errors_name_the_parameter_as_elasticsearch() {
    let e = parse_time("abc", "master_timeout").unwrap_err();
    assert_eq!(e.kind, "illegal_argument_exception");
    assert_eq!(
        e.reason,
        "failed to parse setting [master_timeout] with value [abc] as a time value: unit is missing or unrecognized"
    );
    let b = e.body().to_value();
    assert_eq!(b["status"], 400);
    assert_eq!(b["error"]["root_cause"][0]["reason"], e.reason.as_str());
}

#[test]
fn byte_sizes_as_elasticsearch_reads_them() {
    check(BYTES, |v| parse_bytes(v, "x"), |b| b.to_string());
    assert_eq!(
        parse_bytes("8388607tb", "x").unwrap().bytes(),
        8388607 << 40
    );
    // the largest fractional size saturates as Java's (long) cast, then fits
    assert_eq!(parse_bytes("1e30kb", "x").unwrap().bytes(), i64::MAX);
}

#[test]
fn booleans_as_elasticsearch_reads_them() {
    check(BOOLEAN, parse_bool, |b| {
        b.map_or(String::new(), |b| b.to_string())
    });
}

#[test]
fn search_windows_as_elasticsearch_reads_them() {
    check(
        WINDOW,
        |v| parse_window(v, "size"),
        |n| n.map_or(String::new(), |n| n.to_string()),
    );
    assert_eq!(
        parse_window("-3", "from").unwrap_err().reason,
        "[from] parameter cannot be negative"
    );
}

#[test]
fn comma_lists_as_java_split() {
    for (value, want) in LISTS {
        assert_eq!(split_commas(value).join("|"), *want, "{value:?}");
    }
}

#[test]
fn java_numbers() {
    use java::{is_double, parse_int, parse_long, Num};
    assert_eq!(parse_long("9223372036854775807"), Ok(i64::MAX));
    assert_eq!(parse_long("9223372036854775808"), Err(Num::Invalid));
    assert_eq!(parse_long("-9223372036854775808"), Ok(i64::MIN));
    assert_eq!(parse_long("-9223372036854775809"), Err(Num::Invalid));
    assert_eq!(parse_long("+"), Err(Num::Invalid));
    assert_eq!(parse_long("\u{661}"), Err(Num::NonAscii));
    assert_eq!(parse_int("2147483647"), Ok(i32::MAX));
    assert_eq!(parse_int("2147483648"), Err(Num::Invalid));
    assert_eq!(parse_int("-2147483648"), Ok(i32::MIN));
    for yes in [
        "1",
        "1.",
        ".5",
        "1e5",
        "1E-5",
        "+1.5d",
        " 2f ",
        "NaN",
        "-Infinity",
        "0x1p3",
        "0x.8P-1d",
    ] {
        assert!(is_double(yes), "{yes}");
    }
    for no in [
        "", ".", "e5", "1e", "nan", "infinity", "0x10", "1..2", "1 2", "0xp1", "1ee2",
    ] {
        assert!(!is_double(no), "{no}");
    }
}

#[test]
fn query_strings_split_as_elasticsearch() {
    use crate::percent::{decode_query, raw_pairs};
    let pairs: Vec<_> = raw_pairs(b"a=1;b&&c=&=d").collect();
    assert_eq!(pairs.len(), 4);
    assert_eq!((pairs[1].name, pairs[1].has_value), (&b"b"[..], false));
    assert_eq!((pairs[2].name, pairs[2].value), (&b"c"[..], &b""[..]));
    let decoded = decode_query(b"scroll=1%20h;df=_index&q=+1").unwrap();
    assert_eq!(
        decoded,
        [("scroll", "1 h"), ("df", "_index"), ("q", " 1")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
    );
}
