//! The body plans of `decide` from the route table (a child of `tests.rs`, sharing its
//! clusters, heads and table runner).

use super::*;

// spec 1.5, 2.2, 4.1, 7: the route table decides the body's handling, the `_bulk` limit and
// the shards to reserve (no string compare of the last segment).
#[test]
fn body_handling_from_the_route_table() {
    let count = BodyPlan::CountBulk { max_actions: 10 };
    let single = |line: &str, target: &str, class: Class| {
        (head(line, ACME, "acme", &[]), fwd("acme", class, target))
    };
    let rows = [
        single("POST /_bulk HTTP/1.1", "/_bulk", Class::Update),
        single("POST /books/_bulk HTTP/1.1", "/books/_bulk", Class::Update),
        single(
            "POST /books/doc/_bulk/ HTTP/1.1",
            "/books/doc/_bulk",
            Class::Update,
        ),
        single("POST /%5Fbulk HTTP/1.1", "/_bulk", Class::Update),
    ];
    let mut table_rows = Vec::new();
    for (raw, want) in rows {
        let want = with_body(want, count, Reservation::None, "");
        table_rows.push(("4.1 single-tenant _bulk: counted", raw, None, want));
    }
    let p = prefix();
    let p = p.as_str();
    table_rows.extend([
        (
            "a document id named _bulk is a document, not a bulk body",
            head("PUT /books/_doc/_bulk HTTP/1.1", ACME, "acme", &[]),
            None,
            fwd("acme", Class::Update, "/books/_doc/_bulk"),
        ),
        (
            "single-tenant _msearch passes untouched",
            head("POST /_msearch HTTP/1.1", ACME, "acme", &[]),
            None,
            fwd("acme", Class::Read, "/_msearch"),
        ),
        (
            "2.2 index creation: body read whole, shards reserved",
            head("PUT /books HTTP/1.1", ACME, "acme", &[]),
            None,
            with_body(
                fwd("acme", Class::Update, "/books"),
                BodyPlan::Whole {
                    kind: BodyKind::CreateIndex,
                    limit: MAX_INDEX_BODY,
                },
                Reservation::CreateIndex,
                "",
            ),
        ),
        (
            "1.5 a write to a whitelisted index creates it first",
            head("POST /logstash-1/_doc HTTP/1.1", ACME, "acme", &[]),
            None,
            with_body(
                fwd("acme", Class::Update, "/logstash-1/_doc"),
                BodyPlan::Stream,
                Reservation::AutoCreate,
                "logstash-1",
            ),
        ),
        (
            "1.5 other indices are never auto-created",
            head("POST /books/_doc HTTP/1.1", ACME, "acme", &[]),
            None,
            fwd("acme", Class::Update, "/books/_doc"),
        ),
        (
            "multitenant _bulk: rewritten, with the same limit",
            head("POST /_bulk HTTP/1.1", MT, "mt", &[]),
            None,
            with_body(
                fwd("mt", Class::Update, "/_bulk"),
                BodyPlan::Rewrite {
                    kind: BodyKind::Bulk,
                    max_actions: 10,
                },
                Reservation::None,
                "",
            ),
        ),
        (
            "multitenant _msearch: rewritten",
            head("POST /_msearch HTTP/1.1", MT, "mt", &[]),
            None,
            with_body(
                fwd("mt", Class::Read, &format!("/{p}*/_msearch")),
                BodyPlan::Rewrite {
                    kind: BodyKind::Msearch,
                    max_actions: 10,
                },
                Reservation::None,
                "",
            ),
        ),
        (
            "multitenant index creation: whole body, in the tenant's namespace",
            head("PUT /books HTTP/1.1", MT, "mt", &[]),
            None,
            with_body(
                fwd("mt", Class::Update, &format!("/{p}books")),
                BodyPlan::Whole {
                    kind: BodyKind::CreateIndex,
                    limit: MAX_INDEX_BODY,
                },
                Reservation::CreateIndex,
                "",
            ),
        ),
        (
            "multitenant auto-creation names the tenant's index",
            head("PUT /events-1/_doc/7 HTTP/1.1", MT, "mt", &[]),
            None,
            with_body(
                fwd("mt", Class::Update, &format!("/{p}events-1/_doc/7")),
                BodyPlan::Stream,
                Reservation::AutoCreate,
                "events-1",
            ),
        ),
        (
            "multitenant: endpoints that cannot be confined are 501",
            head("GET /_tasks HTTP/1.1", MT, "mt", &[]),
            None,
            Want::Refuse(E::NotImplemented("_tasks".into())),
        ),
        (
            "multitenant: a body of a media type it cannot read is 406, as Elasticsearch answers",
            head(
                "POST /books/_search HTTP/1.1",
                MT,
                "mt",
                &["Content-Type: application/cbor", "Content-Length: 2"],
            ),
            None,
            Want::Refuse(E::Refused {
                status: 406,
                kind: "content_type_exception",
                reason: "Content-Type header [application/cbor] is not supported".into(),
            }),
        ),
        (
            "issue 29: multitenant: a body in a coding the edge cannot inflate is 400",
            head(
                "POST /books/_search HTTP/1.1",
                MT,
                "mt",
                &[JSON, "Content-Encoding: br", "Content-Length: 2"],
            ),
            None,
            Want::Refuse(E::BadRequest(
                "unsupported Content-Encoding: this cluster reads gzip and deflate request bodies",
            )),
        ),
        (
            "issue 10: a multitenant JSON body is read whole, up to the body limit",
            head(
                "POST /books/_search HTTP/1.1",
                MT,
                "mt",
                &[JSON, "Content-Length: 2"],
            ),
            None,
            with_body(
                fwd("mt", Class::Read, &format!("/{p}books/_search")),
                BodyPlan::Whole {
                    kind: BodyKind::Search,
                    limit: 1000,
                },
                Reservation::None,
                "",
            ),
        ),
        (
            "issue 10: a body the endpoint does not take is read whole (refused unless blank)",
            head(
                "POST /books/_refresh HTTP/1.1",
                MT,
                "mt",
                &[JSON, "Transfer-Encoding: chunked"],
            ),
            None,
            with_body(
                fwd("mt", Class::Update, &format!("/{p}books/_refresh")),
                BodyPlan::Whole {
                    kind: BodyKind::None,
                    limit: 1000,
                },
                Reservation::None,
                "",
            ),
        ),
        (
            "a multitenant search without a body has nothing to read",
            head("GET /books/_search HTTP/1.1", MT, "mt", &[]),
            None,
            fwd("mt", Class::Read, &format!("/{p}books/_search")),
        ),
        (
            "multitenant documents pass as sent",
            head(
                "PUT /books/_doc/1 HTTP/1.1",
                MT,
                "mt",
                &[JSON, "Content-Length: 2"],
            ),
            None,
            fwd("mt", Class::Update, &format!("/{p}books/_doc/1")),
        ),
        (
            "single-tenant _reindex: read whole (a remote source is refused)",
            head(
                "POST /_reindex HTTP/1.1",
                ACME,
                "acme",
                &[JSON, "Content-Length: 2"],
            ),
            None,
            with_body(
                fwd("acme", Class::Update, "/_reindex"),
                BodyPlan::Whole {
                    kind: BodyKind::Reindex,
                    limit: 1000,
                },
                Reservation::None,
                "",
            ),
        ),
        (
            "single-tenant searches stream",
            head(
                "POST /books/_search HTTP/1.1",
                ACME,
                "acme",
                &[JSON, "Content-Length: 2"],
            ),
            None,
            fwd("acme", Class::Read, "/books/_search"),
        ),
    ]);
    table(table_rows);
}

// issue 29: the edge inflates a compressed body it reads (every body of the multitenant
// class; the single-tenant bodies it checks) and passes the others as they came; a coding
// it cannot inflate is 400 only where it must read the body
#[test]
fn compressed_bodies_are_inflated_where_the_edge_reads_them() {
    use crate::tenancy::encoding::Coding;
    let dir = clusters();
    let gz = "Content-Encoding: gzip";
    type Want = Result<Option<Coding>, ()>;
    let rows: [(&str, &str, &str, &[&str], Want); 8] = [
        (
            "POST /books/_search HTTP/1.1",
            MT,
            "mt",
            &[JSON, gz, "Content-Length: 2"],
            Ok(Some(Coding::Gzip)),
        ),
        (
            "POST /_bulk HTTP/1.1",
            MT,
            "mt",
            &[JSON, "Content-Encoding: deflate", "Content-Length: 2"],
            Ok(Some(Coding::Deflate)),
        ),
        ("GET /books/_search HTTP/1.1", MT, "mt", &[gz], Ok(None)),
        (
            "PUT /books HTTP/1.1",
            ACME,
            "acme",
            &[JSON, gz, "Content-Length: 2"],
            Ok(Some(Coding::Gzip)),
        ),
        (
            "POST /_bulk HTTP/1.1",
            ACME,
            "acme",
            &[gz, "Content-Length: 2"],
            Ok(Some(Coding::Gzip)),
        ),
        (
            "POST /books/_search HTTP/1.1",
            ACME,
            "acme",
            &[JSON, gz, "Content-Length: 2"],
            Ok(None),
        ),
        (
            "POST /books/_search HTTP/1.1",
            ACME,
            "acme",
            &[JSON, "Content-Encoding: br", "Content-Length: 2"],
            Ok(None),
        ),
        (
            "PUT /books HTTP/1.1",
            ACME,
            "acme",
            &[JSON, "Content-Encoding: br", "Content-Length: 2"],
            Err(()),
        ),
    ];
    for (line, host, creds, extra, want) in rows {
        let raw = head(line, host, creds, extra);
        let got = decided(&dir, &raw, None, 1000, |d, _| {
            d.map(|d| d.inflate)
                .map_err(|r| assert_eq!(r.error.status(), 400))
        });
        assert_eq!(got, want, "{line} {extra:?}");
    }
}
