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

/// The count by a plain reading of the whole body, with Elasticsearch's rules: split on
/// newlines, skip blank lines where an action may start, an action line is followed by a
/// source line (whatever it holds, a blank one too) unless its first key is `delete`.
/// (Before the one framer, this reading skipped blank source lines too, which
/// Elasticsearch does not: a blank source then hid the action after it from the count.)
fn reference_count(body: &[u8]) -> u64 {
    let mut actions = 0;
    let mut expect_action = true;
    let mut parts: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let tail = parts.pop().unwrap_or_default();
    for line in parts {
        if !expect_action {
            expect_action = true;
            continue;
        }
        let Some(start) = line.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r')) else {
            continue;
        };
        actions += 1;
        expect_action = first_key(&line[start..]).as_deref() == Some("delete");
    }
    let started = expect_action && tail.iter().any(|b| !matches!(b, b' ' | b'\t' | b'\r'));
    actions + u64::from(started)
}

/// The first key of an object line, decoded by serde_json (`None`: the line does not
/// start as an object with a key).
fn first_key(line: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(line).ok()?;
    let rest = text
        .strip_prefix('{')?
        .trim_start_matches([' ', '\t', '\r']);
    let bytes = rest.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while *bytes.get(i)? != b'"' {
        i += if bytes[i] == b'\\' { 2 } else { 1 };
    }
    serde_json::from_str(&rest[..=i]).ok()
}

/// Bodies of random lines (actions of every kind, sources, blank lines, long lines that
/// cross the 64-byte blocks), fed in random pieces: the streaming count equals the
/// reference.
#[test]
fn random_bodies_in_random_pieces_match_the_reference() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for _ in 0..2000 {
        let mut body = Vec::new();
        for _ in 0..rnd(40) {
            match rnd(12) {
                // the compact forms the fast path decides from the first bytes, and near misses
                7 => body.extend_from_slice(b"{\"index\":{\"_id\":\"1\"}}\n"),
                8 => body.extend_from_slice(b"{\"create\":{}}\n{\"update\":{}}\n"),
                9 => body.extend_from_slice(b"{\"deleted\":{}}\n{\"delete\" :{}}\n"),
                10 => body.extend_from_slice(b"{\"delete\"\n{\"index\"\n"),
                0 => body.extend_from_slice(b"{\"delete\":{\"_id\":\"1\"}}\n"),
                1 => body.extend_from_slice(b" { \"index\" : {} }\r\n"),
                2 => body.extend_from_slice(b"\n\r\n"),
                3 => body.extend_from_slice(b"{\"\\u0064elete\":{}}\n"),
                _ => {
                    body.extend_from_slice(b"{\"f\":\"");
                    body.extend(std::iter::repeat_n(b'x', rnd(300)));
                    body.extend_from_slice(b"\"}\n");
                }
            }
        }
        let want = reference_count(&body);
        let mut cuts: Vec<usize> = (0..rnd(6)).map(|_| rnd(body.len() + 1)).collect();
        cuts.sort_unstable();
        assert_eq!(count_in_pieces(&body, &cuts), want, "cuts {cuts:?}");
    }
}
