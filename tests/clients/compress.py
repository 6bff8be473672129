"""elasticsearch-py with http_compress=True (gzip request bodies, Accept-Encoding: gzip)
against one cluster: a gzip bulk load, then a gzip search. Prints one JSON line of what it
saw; the Rust test (tests/it/compress_e2e.rs) checks it. Used by issue 29's tests."""

import argparse
import json

from elasticsearch import Elasticsearch, helpers


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--index", required=True)
    p.add_argument("--docs", type=int, default=2000)
    a = p.parse_args()
    es = Elasticsearch(a.url, http_compress=True, request_timeout=60)
    # a gzip JSON body too (the service creates indices only when asked)
    es.indices.create(
        index=a.index, settings={"number_of_shards": 1, "number_of_replicas": 0}
    )
    docs = (
        {
            "_index": a.index,
            "_id": str(i),
            "title": f"page {i}",
            "body": "static site search with compressed bodies " * 10,
        }
        for i in range(a.docs)
    )
    ok, errors = helpers.bulk(es, docs, chunk_size=500, refresh=True)
    resp = es.search(index=a.index, query={"match": {"title": "page"}}, size=3)
    print(
        json.dumps(
            {
                "bulk_ok": ok,
                "bulk_errors": len(errors),
                "hits": resp["hits"]["total"]["value"],
                "hit_index": resp["hits"]["hits"][0]["_index"],
                "content_encoding": resp.meta.headers.get("content-encoding"),
            }
        )
    )


if __name__ == "__main__":
    main()
