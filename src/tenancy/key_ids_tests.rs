//! Table tests of a single-tenant key's tokens: opened where the engine reads ids, refused
//! when raw, foreign or tampered, bodies the strict reader cannot read refused.

use super::*;
use crate::config::ClusterClass;
use crate::proto::Method;
use crate::request::classify::classify_request;
use crate::tenancy::ids::binding;
use crate::tenancy::prefix::TenancyKey;

fn sealer() -> IdSealer {
    IdSealer::new(&TenancyKey::from_bytes([11; 32]))
}

fn target(
    ids: &KeyIds<'_>,
    method: Method,
    path: &str,
    query: Option<&str>,
) -> Result<String, EdgeError> {
    let c = classify_request(method, path.as_bytes(), ClusterClass::SingleTenant).unwrap();
    let mut out = Vec::new();
    write_target(ids, &c, query.map(str::as_bytes), &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn status(r: Result<impl std::fmt::Debug, EdgeError>) -> u16 {
    r.unwrap_err().body().status
}

#[test]
fn tokens_open_only_for_their_key() {
    let s = sealer();
    let web = binding("c1", Some("k1"));
    let other = binding("c1", Some("k2"));
    let ids = KeyIds {
        sealer: Some(&s),
        binding: &web,
    };
    let mine = s.seal(&web, IdKind::Scroll, b"RAWSCROLL");
    let theirs = s.seal(&other, IdKind::Scroll, b"MASTERS");
    let masters = s.seal("c1", IdKind::Scroll, b"MASTERS");
    let pit = s.seal(&web, IdKind::Pit, b"RAWPIT");
    let mut tampered = mine.clone();
    tampered.pop();
    tampered.push('A');

    let ok = target(&ids, Method::Get, &format!("/_search/scroll/{mine}"), None).unwrap();
    assert_eq!(ok, "/_search/scroll/RAWSCROLL");
    let q = format!("scroll=1m&scroll%5Fid={mine}");
    let ok = target(&ids, Method::Get, "/_search/scroll", Some(&q)).unwrap();
    assert_eq!(ok, "/_search/scroll?scroll=1m&scroll_id=RAWSCROLL");
    for bad in [&theirs, &masters, &tampered, &"RAWSCROLL".to_string(), &pit] {
        let p = format!("/_search/scroll/{mine},{bad}");
        assert_eq!(status(target(&ids, Method::Delete, &p, None)), 404, "{bad}");
        let q = format!("scroll_id={bad}");
        assert_eq!(
            status(target(&ids, Method::Get, "/_search/scroll", Some(&q))),
            404
        );
    }
    let twice = format!("scroll_id={mine}&scroll_id={mine}");
    assert_eq!(
        status(target(&ids, Method::Get, "/_search/scroll", Some(&twice))),
        400
    );
    for q in [
        "source=%7B%7D&source_content_type=application/json",
        "sour%63e=x",
    ] {
        assert_eq!(
            status(target(&ids, Method::Get, "/site/_search", Some(q))),
            400,
            "{q}"
        );
    }
    let none = KeyIds {
        sealer: None,
        binding: &web,
    };
    let p = format!("/_search/scroll/{mine}");
    assert_eq!(status(target(&none, Method::Get, &p, None)), 404);
}

#[test]
fn bodies_open_their_tokens_and_refuse_what_they_cannot_read() {
    let s = sealer();
    let web = binding("c1", Some("k1"));
    let ids = KeyIds {
        sealer: Some(&s),
        binding: &web,
    };
    let sc = s.seal(&web, IdKind::Scroll, b"S1");
    let pit = s.seal(&web, IdKind::Pit, b"P1");
    let open = |kind, body: String| open_body(&ids, kind, body.as_bytes());
    let cases = [
        (
            BodyKind::Scroll,
            format!(r#"{{"scroll":"1m","scroll_id":"{sc}"}}"#),
            r#"{"scroll":"1m","scroll_id":"S1"}"#,
        ),
        (
            BodyKind::ClearScroll,
            format!(r#"{{"scroll_id":["{sc}"]}}"#),
            r#"{"scroll_id":["S1"]}"#,
        ),
        (
            BodyKind::ClosePit,
            format!(r#"{{"id":"{pit}"}}"#),
            r#"{"id":"P1"}"#,
        ),
        (
            BodyKind::ClosePitIds,
            format!(r#"{{"pit_id":["{pit}"]}}"#),
            r#"{"pit_id":["P1"]}"#,
        ),
        (
            BodyKind::Search,
            format!(r#"{{"size":1,"p\u0069t":{{"id":"{pit}","keep_alive":"1m"}}}}"#),
            r#"{"size":1,"pit":{"id":"P1","keep_alive":"1m"}}"#,
        ),
    ];
    for (kind, body, want) in cases {
        let got = open(kind, body).unwrap().body.unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), want);
    }
    // nothing to open: forwarded as it came
    assert_eq!(
        open(BodyKind::Search, r#"{"size":1}"#.into()).unwrap(),
        Opened::default()
    );
    // raw, the scroll token as a point in time, another key's
    let theirs = s.seal(&binding("c1", Some("k2")), IdKind::Pit, b"P1");
    for id in ["P1".to_string(), sc.clone(), theirs] {
        let body = format!(r#"{{"pit":{{"id":"{id}"}}}}"#);
        assert_eq!(status(open(BodyKind::Search, body)), 404);
    }
    // unreadable: comments, duplicate keys, not an object
    for body in [
        format!(r#"{{"pit":{{"id":"{pit}"}} /* x */}}"#),
        format!(r#"{{"pit":{{"id":"{pit}"}},"pit":{{"id":"P9"}}}}"#),
        "[1]".to_string(),
        r#"{"pit":"P1"}"#.to_string(),
    ] {
        assert_eq!(status(open(BodyKind::Search, body.clone())), 400, "{body}");
    }
    let ms = "{}\n{\"pit\":{\"id\":\"P1\"}}\n".to_string();
    assert_eq!(status(open(BodyKind::Msearch, ms)), 400);
    let ms = "{\"index\":\"a\"}\n{\"query\":{\"match_all\":{}}}\n".to_string();
    assert_eq!(open(BodyKind::Msearch, ms).unwrap(), Opened::default());
    let mut t = b"/site*,blog*/_search?size=1".to_vec();
    drop_first_segment(&mut t);
    assert_eq!(t, b"/_search?size=1");
    let ms = "{}\n{\"query\":{}} // c\n".to_string();
    assert_eq!(status(open(BodyKind::Msearch, ms)), 400);
}
