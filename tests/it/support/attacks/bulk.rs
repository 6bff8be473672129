//! Issue 25 #4: the multitenant `_bulk` rewriter (it forwards action and source lines in
//! place and only inserts the prefix) attacked as a tenant would: repeated keys and
//! actions, `_index` in odd encodings and expressions, comments, blank space and line
//! ends, the body cut anywhere by chunk boundaries, update bodies and parameters naming
//! other indices, many tiny lines. Whatever the answer, [`World::send`] checks that no
//! prefix or other tenant's marker shows, and the caller checks the victim's documents
//! and that no index exists outside the tenants. Where the edge forwards, it must read the
//! body as the upstream does: the same body cut into chunks anywhere is answered the same.

use super::{forwarded, Who, World};
use crate::support::e2e::Response;

/// `s` as a JSON string literal.
fn lit(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// `s` with every character as a `\uXXXX` escape.
fn escaped(s: &str) -> String {
    let inner: String = s.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
    format!("\"{inner}\"")
}

/// `_index` values a tenant may try: the other tenant's real index (plain and escaped),
/// path tricks, control bytes, expressions, non-strings.
fn hostile_names(w: &World<'_>) -> Vec<String> {
    let victim = format!("{}books", w.pb);
    vec![
        lit(&victim),
        escaped(&victim),
        "\"\\u002fbooks\"".into(),
        format!("\"..\\u002f{victim}\""),
        "\"books\\u0000x\"".into(),
        lit(&"b".repeat(300)),
        "\"\\ud800books\"".into(),
        lit("*"),
        lit("_all"),
        lit(&format!("books,{victim}")),
        lit(&format!("<{victim}-{{now/d}}>")),
        lit("%3Cbooks-%7Bnow%2Fd%7D%3E"),
        lit(&format!("remote:{victim}")),
        lit("-books"),
        lit(" books"),
        "1".into(),
        "null".into(),
        "[\"books\"]".into(),
        "{\"a\":1}".into(),
        "\"\"".into(),
    ]
}

/// Bodies whose lines a reader could take otherwise than Elasticsearch: each deletes or
/// writes the victim's documents if the edge and the upstream disagree.
fn hostile_bodies(w: &World<'_>) -> Vec<Vec<u8>> {
    let v = lit(&format!("{}books", w.pb));
    let mut out: Vec<String> = vec![
        format!("{{\"delete\":{{\"_index\":\"books\",\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"delete\":{{\"_index\":{v},\"_index\":\"books\",\"_id\":\"1\"}}}}\n"),
        format!("{{\"delete\":{{\"_index\":\"books\",\"_id\":\"7\"}},\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"index\":{{\"_index\":\"books\"}},\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n{{}}\n"),
        format!("{{\"delete\":{{\"_index\":\"books\",\"\\u005findex\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"\\u0064elete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"delete\":{{\"_index\":\"books\",\"_id\":\"7\"}}}} /* {{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}} */\n"),
        format!("{{\"delete\":{{/*x*/\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("# x\n{{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("\u{feff}{{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"delete\":{{\"_index\":\"books\",\"_id\":\"7\"}}}}\r{{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"delete\":{{\"_index\":\"books\",\"_id\":\"7\"}}}}\u{b}\n{{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("\u{c}{{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"delete\":{{\"_index\":\"books\",\"_id\":\"7\"}}}}\n\u{0}{{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"delete\":{{\"_index\":\"books\",\"_id\":\"7\"}}}} {{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"index\":{{\"_index\":\"books\"}}}}\n{{\"n\":1}}\n{{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}"),
        format!("{{\"index\":{{\"_index\":\"books\"}}}}\n\n{{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\n"),
        format!("{{\"update\":{{\"_index\":\"books\",\"_id\":\"u1\"}}}}\n{{\"script\":{{\"source\":\"ctx._index = {v}\"}},\"upsert\":{{}}}}\n"),
        format!("{{\"update\":{{\"_index\":\"books\",\"_id\":\"u2\"}}}}\n{{\"doc\":{{\"_index\":{v}}},\"doc_as_upsert\":true}}\n"),
        format!("{{\"update\":{{\"_index\":\"books\",\"_id\":\"u3\"}}}}\n{{\"doc\":{{\"n\":1}},\"_index\":{v}}}\n"),
        format!("{{\"update\":{{\"_index\":\"books\",\"_id\":\"u4\"}}}}\n{{\"doc\":{{\"n\":1}},\"doc_as_upsert\":true,\"_source\":[{v}]}}\n"),
        "{\"index\":{\"_index\":\"books\",\"pipeline\":\"p\"}}\n{}\n".into(),
        "{\"index\":{\"_index\":\"books\",\"\\u0070ipeline\":\"p\"}}\n{}\n".into(),
    ];
    for n in hostile_names(w) {
        out.push(format!("{{\"delete\":{{\"_index\":{n},\"_id\":\"1\"}}}}\n"));
        out.push(format!(
            "{{\"index\":{{\"_index\":{n},\"_id\":\"1\"}}}}\n{{\"n\":1}}\n"
        ));
    }
    let mut bytes: Vec<Vec<u8>> = out.into_iter().map(String::into_bytes).collect();
    bytes.push(b"{\"delete\":{\"_index\":\"books\xc0\xaf\",\"_id\":\"1\"}}\n".to_vec());
    bytes.push(b"{\"delete\":{\"_index\":\"books\xff\",\"_id\":\"1\"}}\n".to_vec());
    bytes
}

/// What a bulk answer says, item by item (action, status, error type), or the error.
fn outcome(r: &Response) -> String {
    if r.status != 200 {
        return format!("{} {}", r.status, r.json()["error"]["type"]);
    }
    let items = r.json()["items"].as_array().cloned().unwrap_or_default();
    let each: Vec<String> = items
        .iter()
        .map(|i| {
            let (action, v) = i.as_object().unwrap().iter().next().unwrap();
            format!("{action}:{}:{}", v["status"], v["error"]["type"])
        })
        .collect();
    format!("200 {}", each.join(","))
}

/// `alpha`'s bulk `body` to `path`. The bodies name the victim's real index, some only
/// escaped (`\u0074...`): the upstream's errors echo the name decoded, which tells the
/// attacker only what it sent; a header carries it plainly so that [`World::send`]
/// counts it as sent (its own prefix and the victim's marker are still checked).
fn send_learned(w: &World<'_>, path: &str, body: &[u8]) -> Response {
    let req = w
        .alpha
        .req("POST", path)
        .header("Content-Type", "application/x-ndjson")
        .header("X-Learned", &format!("{}books", w.pb))
        .body(body.to_vec());
    w.send(Who::Alpha, &req)
}

/// The family (module docs).
pub fn bulk_rewriter(w: &World<'_>) {
    for body in hostile_bodies(w) {
        for path in ["/_bulk", "/books/_bulk"] {
            let r = send_learned(w, path, &body);
            forwarded(&r, &String::from_utf8_lossy(&body));
        }
    }
    // the path names the other tenant's index, or an expression
    let one = b"{\"delete\":{\"_id\":\"1\"}}\n";
    for path in [
        format!("/{}books/_bulk", w.pb),
        "/*/_bulk".into(),
        "/_all/_bulk".into(),
        format!("/books,{}books/_bulk", w.pb),
        "/%3Cbooks-%7Bnow%2Fd%7D%3E/_bulk".into(),
        "/books/_bulk?pipeline=p".into(),
    ] {
        forwarded(&w.ndjson(&path, one), &path);
    }
    split_anywhere(w);
    tiny_lines(w);
}

/// A body mixing the shapes the in-place rewriter treats apart (kept heads, `\r\n`,
/// escapes, updates), sent whole and in chunks of every size from 1 byte to the body's
/// length (step 5, and 1, 2, 3, 7): always the same answer.
fn split_anywhere(w: &World<'_>) {
    let body = format!(
        "{{\"index\":{{\"_index\":\"books\",\"_id\":\"s1\"}}}}\n{{\"n\":1}}\n\
         {{\"index\":{{\"_index\":\"books\",\"_id\":\"s2\"}}}}\n{{\"n\":2}}\n\
         {{\"delete\":{{\"_index\":{v},\"_id\":\"1\"}}}}\r\n\
         {{\"index\":{{\"_index\":\"b\\u006foks\",\"_id\":\"s3\"}}}}\n{{\"n\":\"\\u0000\"}}\n\
         {{\"update\":{{\"_index\":\"books\",\"_id\":\"s1\"}}}}\n{{\"doc\":{{\"m\":2}}}}\n",
        v = lit(&format!("{}books", w.pb))
    )
    .into_bytes();
    let send = |chunk: Option<usize>| {
        let req = (w.alpha.req("POST", "/_bulk"))
            .header("Content-Type", "application/x-ndjson")
            .header("X-Learned", &format!("{}books", w.pb))
            .body(body.clone());
        let req = match chunk {
            Some(c) => req.chunked(c),
            None => req,
        };
        outcome(&w.send(Who::Alpha, &req))
    };
    let whole = send(None);
    assert!(
        whole.starts_with("200 index:201") || whole.starts_with("200 index:200"),
        "{whole}"
    );
    for c in [1, 2, 3, 7] {
        assert_eq!(
            send(Some(c)),
            whole.replace(":201", ":200"),
            "chunks of {c}"
        );
    }
    for at in (1..body.len()).step_by(5) {
        assert_eq!(
            send(Some(at)),
            whole.replace(":201", ":200"),
            "chunks of {at}"
        );
    }
}

/// Many tiny lines: the edge answers (within the plan's `max_bulk_actions` or with its
/// 413), never stalls or fails.
fn tiny_lines(w: &World<'_>) {
    let deletes = "{\"delete\":{\"_index\":\"books\",\"_id\":\"x\"}}\n".repeat(20_000);
    let r = w.ndjson("/_bulk", deletes.as_bytes());
    assert!(matches!(r.status, 200 | 413), "{}", r.text());
    let writes = "{\"index\":{}}\n{}\n".repeat(20_000);
    let r = w.ndjson("/books/_bulk", writes.as_bytes());
    assert!(matches!(r.status, 200 | 413), "{}", r.text());
}
