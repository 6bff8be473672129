#!/usr/bin/env python3
"""A real client flow against an Elasticsearch-compatible endpoint, with the official
elasticsearch-py 8 client and/or opensearch-py: create index, index documents, bulk helper,
refresh, search, count, scan (scroll), mapping, get, delete, errors.

Usage: flow.py --url http[s]://[user:pass@]host:port [--ca FILE] [--client es|opensearch|both]
               [--prefix NAME] [--no-scroll]

The same script runs against the engine directly and through the edge (HTTPS, with the
cluster's credentials in the URL and the edge's CA), on both cluster classes (the
multitenant one seals scroll ids). With --no-scroll (an edge that does not expose scroll)
the scan step instead checks that `_search/scroll` is an Elasticsearch-shaped 501. Exits
non-zero on the first failure.
"""

import argparse
import sys
import urllib.parse


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def parse_url(url):
    u = urllib.parse.urlsplit(url)
    auth = None
    if u.username is not None:
        auth = (urllib.parse.unquote(u.username), urllib.parse.unquote(u.password or ""))
    port = u.port or (443 if u.scheme == "https" else 80)
    host = u.hostname
    clean = f"{u.scheme}://{host}:{port}{u.path}"
    return clean, auth, u.scheme == "https", host, port


def docs(n):
    return [
        {"title": f"The quick brown fox number {i}", "n": i, "tag": "even" if i % 2 == 0 else "odd"}
        for i in range(n)
    ]


def error_of(e):
    """(status, body) of a client exception, for both clients."""
    status = getattr(e, "status_code", None)
    meta = getattr(e, "meta", None)
    if meta is not None and hasattr(meta, "status"):
        status = meta.status
    body = getattr(e, "body", None) or getattr(e, "info", None)
    return status, body


def scan_step(client, helpers, index, kind, scroll):
    if not scroll:
        print(f"[{kind}] scroll is not exposed: the edge answers 501")
        opening = lambda: list(helpers.scan(client, index=index, query={"query": {"match_all": {}}},
                                            size=120, scroll="1m"))
        for call, named in ((lambda: client.scroll(scroll_id="A" * 32, scroll="1m"), "_search/scroll"),
                            (lambda: client.clear_scroll(scroll_id="A" * 32), "_search/scroll"),
                            (opening, "scroll")):
            try:
                call()
                raise AssertionError("scroll answered on a cluster where it is not exposed")
            except AssertionError:
                raise
            except Exception as e:  # the client's error class for a 501
                status, body = error_of(e)
                check(status == 501, f"scroll status: {status} {body}")
                check(body["status"] == 501 and body["error"]["type"] == "not_implemented_exception",
                      f"501 body: {body}")
                check(f"[{named}]" in body["error"]["reason"], f"501 reason: {body}")
        return
    print(f"[{kind}] scan: every document once, in index order and by score")
    ids = [h["_id"] for h in helpers.scan(client, index=index, query={"query": {"match_all": {}}},
                                          size=120, scroll="1m")]
    check(len(ids) == 500 and len(set(ids)) == 500, f"scan: {len(ids)} hits, {len(set(ids))} distinct")
    hits = list(helpers.scan(client, index=index, query={"query": {"match": {"title": "fox"}}},
                             size=90, scroll="1m", preserve_order=True))
    check(len({h["_id"] for h in hits}) == 500, f"scan by score: {len(hits)} hits")
    scores = [h["_score"] for h in hits]
    check(all(a >= b for a, b in zip(scores, scores[1:])), "scores descend across pages")


def flow(client, helpers, index, kind, not_found_error, scroll=True):
    print(f"[{kind}] info")
    info = client.info()
    check(info["version"]["number"].startswith("7.10"), f"version: {info['version']}")
    check(info["tagline"] == "You Know, for Search", "tagline")

    print(f"[{kind}] create index {index}")
    if client.indices.exists(index=index):
        client.indices.delete(index=index)
    body = {
        "settings": {"number_of_shards": 2, "number_of_replicas": 0},
        "mappings": {"properties": {"tag": {"type": "keyword"}, "n": {"type": "long"}}},
    }
    if kind == "es":
        r = client.indices.create(index=index, settings=body["settings"], mappings=body["mappings"])
    else:
        r = client.indices.create(index=index, body=body)
    check(r["acknowledged"] is True, f"create: {r}")
    check(client.indices.exists(index=index), "exists after create")

    print(f"[{kind}] index documents")
    for i, d in enumerate(docs(3)):
        if kind == "es":
            r = client.index(index=index, id=str(i), document=d)
        else:
            r = client.index(index=index, id=str(i), body=d)
        check(r["result"] == "created" and r["_version"] == 1, f"index: {r}")
    if kind == "es":
        r = client.index(index=index, id="0", document=docs(1)[0])
    else:
        r = client.index(index=index, id="0", body=docs(1)[0])
    check(r["result"] == "updated" and r["_version"] == 2, f"reindex: {r}")

    print(f"[{kind}] bulk helper")
    actions = ({"_index": index, "_id": str(i), "_source": d} for i, d in enumerate(docs(500)) if i >= 3)
    ok, errors = helpers.bulk(client, actions, chunk_size=200)
    check(ok == 497 and not errors, f"bulk: {ok} {errors}")

    print(f"[{kind}] refresh, search, count")
    client.indices.refresh(index=index)
    if kind == "es":
        r = client.search(index=index, query={"match": {"title": "fox"}}, size=5)
    else:
        r = client.search(index=index, body={"query": {"match": {"title": "fox"}}, "size": 5})
    total = r["hits"]["total"]
    total = total["value"] if isinstance(total, dict) else total
    check(total == 500, f"search total: {total}")
    check(len(r["hits"]["hits"]) == 5 and r["hits"]["max_score"] > 0, "search hits")
    if kind == "es":
        r = client.search(index=index, query={"term": {"tag": "even"}}, sort=[{"n": "desc"}], size=1,
                          aggs={"tags": {"terms": {"field": "tag"}}})
    else:
        r = client.search(index=index, body={"query": {"term": {"tag": "even"}}, "sort": [{"n": "desc"}],
                                             "size": 1, "aggs": {"tags": {"terms": {"field": "tag"}}}})
    check(r["hits"]["hits"][0]["_source"]["n"] == 498, f"sort: {r['hits']['hits']}")
    check(r["aggregations"]["tags"]["buckets"] == [{"key": "even", "doc_count": 250}], f"aggs: {r['aggregations']}")
    if kind == "es":
        c = client.count(index=index, query={"range": {"n": {"gte": 100, "lt": 200}}})
    else:
        c = client.count(index=index, body={"query": {"range": {"n": {"gte": 100, "lt": 200}}}})
    check(c["count"] == 100, f"count: {c}")

    scan_step(client, helpers, index, kind, scroll)

    print(f"[{kind}] mapping")
    m = client.indices.get_mapping(index=index)
    props = m[index]["mappings"]
    props = props.get("_doc", props).get("properties", props.get("properties"))
    check(props["n"]["type"] == "long" and props["tag"]["type"] == "keyword", f"mapping: {m}")
    check(props["title"]["type"] == "text" and props["title"]["fields"]["keyword"]["type"] == "keyword", "dynamic text")

    print(f"[{kind}] get, delete")
    g = client.get(index=index, id="7")
    check(g["found"] and g["_source"]["n"] == 7, f"get: {g}")
    d = client.delete(index=index, id="7", refresh=True)
    check(d["result"] == "deleted", f"delete: {d}")
    check(not client.exists(index=index, id="7"), "deleted document still exists")
    check(client.count(index=index)["count"] == 499, "count after delete")

    print(f"[{kind}] errors")
    try:
        client.search(index=index + "-missing")
        raise AssertionError("search on a missing index succeeded")
    except not_found_error as e:
        body = getattr(e, "body", None) or getattr(e, "info", None)
        check(body["error"]["type"] == "index_not_found_exception", f"404 body: {body}")
        check(body["error"]["reason"] == "no such index", "reason")

    print(f"[{kind}] delete index")
    r = client.indices.delete(index=index)
    check(r["acknowledged"] is True, f"delete index: {r}")
    check(not client.indices.exists(index=index), "index still exists")


def run_es(url, ca, index, scroll):
    import elasticsearch
    from elasticsearch import Elasticsearch, NotFoundError, helpers

    clean, auth, tls, _, _ = parse_url(url)
    kw = {"request_timeout": 60}
    if auth:
        kw["basic_auth"] = auth
    if tls and ca:
        kw["ca_certs"] = ca
    client = Elasticsearch(clean, **kw)
    print(f"elasticsearch-py {elasticsearch.__versionstr__}")
    flow(client, helpers, index, "es", NotFoundError, scroll)


def run_opensearch(url, ca, index, scroll):
    import opensearchpy
    from opensearchpy import NotFoundError, OpenSearch, helpers

    _, auth, tls, host, port = parse_url(url)
    kw = {"hosts": [{"host": host, "port": port}], "use_ssl": tls, "timeout": 60}
    if auth:
        kw["http_auth"] = auth
    if tls:
        kw["verify_certs"] = True
        if ca:
            kw["ca_certs"] = ca
    client = OpenSearch(**kw)
    print(f"opensearch-py {opensearchpy.__versionstr__}")
    flow(client, helpers, index, "opensearch", NotFoundError, scroll)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--ca")
    p.add_argument("--client", choices=["es", "opensearch", "both"], default="both")
    p.add_argument("--prefix", default="clients-flow")
    p.add_argument("--no-scroll", action="store_true",
                   help="scroll is not exposed (multitenant cluster): expect the edge's 501")
    a = p.parse_args()
    if a.client in ("es", "both"):
        run_es(a.url, a.ca, a.prefix + "-es", not a.no_scroll)
    if a.client in ("opensearch", "both"):
        run_opensearch(a.url, a.ca, a.prefix + "-os", not a.no_scroll)
    print("client flow: ok")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # any failure: say what and exit non-zero
        print(f"client flow FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        raise
