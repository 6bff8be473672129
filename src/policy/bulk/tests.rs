//! Bulk action counting: every split point, deletes without sources, blank lines.

use super::*;

const BODY: &[u8] = b"{\"index\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"f\":1}\n\
{ \"delete\" : {\"_index\":\"a\",\"_id\":\"2\"}}\n\
\n\
{\"create\":{\"_index\":\"a\",\"_id\":\"3\"}}\n{\"f\":\"{\\\"index\\\":1}\"}\n\
{\"update\":{\"_index\":\"a\",\"_id\":\"1\"}}\n{\"doc\":{\"f\":2}}\n\
{\"delete\":{\"_index\":\"a\",\"_id\":\"9\"}}\n";

fn count_in_pieces(body: &[u8], cuts: &[usize]) -> u64 {
    let mut c = BulkCounter::new();
    let mut last = 0;
    for &cut in cuts {
        c.feed(&body[last..cut]);
        last = cut;
    }
    c.feed(&body[last..])
}

// spec 4.1: action line + source line pairs; delete has no source line
#[test]
fn counts_actions_not_lines() {
    assert_eq!(count_in_pieces(BODY, &[]), 5);
}

#[test]
fn every_single_split_point_gives_the_same_count() {
    for cut in 0..=BODY.len() {
        assert_eq!(count_in_pieces(BODY, &[cut]), 5, "split at {cut}");
    }
}

#[test]
fn byte_by_byte() {
    let cuts: Vec<usize> = (1..BODY.len()).collect();
    assert_eq!(count_in_pieces(BODY, &cuts), 5);
}

#[test]
fn counts_from_the_first_byte_of_an_action() {
    let mut c = BulkCounter::new();
    assert_eq!(
        c.feed(b"{\"index\":{}}\n{}\n{"),
        2,
        "the third line starts action 2"
    );
}

#[test]
fn source_lines_that_look_like_actions_are_not_counted() {
    let body = b"{\"index\":{}}\n{\"delete\":{}}\n{\"index\":{}}\n{\"delete\":{}}\n";
    assert_eq!(count_in_pieces(body, &[]), 2);
}

#[test]
fn unrecognisable_lines_still_count_and_crlf_is_blank_space() {
    let body = b"garbage\r\n{\"x\":1}\r\n\r\n{\"index\":{}}\r\n{}\r\n";
    assert_eq!(count_in_pieces(body, &[]), 2);
}

#[test]
fn long_action_lines_are_fine() {
    let long = format!(
        "{{ {}\"index\":{{\"_id\":\"{}\"}}}}\n{{}}\n",
        " ".repeat(100),
        "x".repeat(500)
    );
    let body = long.repeat(3);
    assert_eq!(
        count_in_pieces(body.as_bytes(), &[]),
        3,
        "key past the prefix window: counted"
    );
    let body = "{\"delete\":{}}\n".repeat(4);
    assert_eq!(count_in_pieces(body.as_bytes(), &[7, 20]), 4);
}

// The table the tenancy rewriter's count was tested with: the same answers here.
#[test]
fn counting_table_at_every_split() {
    let table: &[(&str, u64)] = &[
        ("", 0),
        ("\n\n", 0),
        ("{\"index\":{}}\n{\"a\":1}\n", 1),
        ("{\"index\":{}}\n{\"index\":{}}\n", 1),
        (
            "{\"delete\":{\"_id\":\"1\"}}\n{\"delete\":{\"_id\":\"2\"}}\n",
            2,
        ),
        ("{\"delete\":{}}\n{\"index\":{}}\n{\"delete\":{}}\n", 2),
        (
            "{\"index\":{}}\n{}\n\n{\"create\":{}}\n{}\n{\"update\":{}}\n{\"doc\":{}}\n",
            3,
        ),
        ("{\"\\u0064elete\":{}}\n{\"delete\":{}}\n", 2),
        ("{\"a\\\"b\":{}}\n{}\n{\"delete\":{}}\n", 2),
        ("not json\nsource\n{\"delete\":{}}\n", 2),
        ("{\"delete\":{}}", 1),
    ];
    for (body, n) in table {
        let b = body.as_bytes();
        for i in 0..=b.len() {
            assert_eq!(count_in_pieces(b, &[i]), *n, "{body} split at {i}");
        }
    }
}
