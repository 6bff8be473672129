#!/usr/bin/env python3
"""Noisy-neighbour benchmark (issue 25): how much one hostile tenant slows another down.

Starts `searchgate serve` (the release binary, the embedded engine as its child) with two
multitenant clusters on one plan, `quiet` and `noisy`. The quiet tenant runs an ordinary
mix in a loop on one keep-alive connection: a 10-document `_bulk`, a search, a scroll
opened and cleared. Each round has two phases of `--seconds`, in ABBA order over the
rounds (quiet alone, then with noise; then with noise, then alone; ...) so that slow
drifts of the machine hit both alike. In the noisy phase another process runs the hostile
patterns of tests/it/defence_noisy.rs in `--noisy-workers` processes: scrolls and points
in time never cleared, hour-long `_cluster/health` waits, out-of-range numbers, deep
nesting (JSON, query strings), scripts building gigabytes, heavy aggregations abandoned
after a second, malformed framing, half-sent requests and slowloris connections.

Prints, per phase, the quiet tenant's requests, failures (any non-2xx: the correctness
part, which must be 0), p50 and p99 latency; then the median over the rounds of each and
their spread (min-max), and the median of the per-round ratios noisy/quiet. The issue's
goal: the quiet p99 within 2x of the quiet run's.

Everything listens on 127.0.0.1, every phase is bounded in time, and every process
started here is stopped at the end. Run it when nothing else loads the machine:

    cargo build --release -p searchgate-cli
    python3 loadtest/noisy.py [--rounds 4] [--seconds 10] [--noisy-workers 4]
"""

import argparse
import base64
import http.client
import json
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from procs import cleanup, drain, start, wait_line  # noqa: E402

DOMAIN = "localhost"


def config(dir_):
    clusters = "".join(
        f"""
[[clusters]]
id = "{c}"
hostname = "{c}"
region = "r1"
class = "multitenant"
plan = "p"
username = "{c}user"
password = "{c}pass"
"""
        for c in ("quiet", "noisy")
    )
    return f"""[edge]
domain = "{DOMAIN}"
http = "127.0.0.1:0"
data_dir = "{dir_}/edge"
access_log = "off"
deadline = "4s"
head_timeout = "3s"
body_timeout = "3s"
metering_interval = "1h"

[engine]
listen = "127.0.0.1:0"
data_dir = "{dir_}/engine"

[[plans]]
name = "p"
concurrency = 8
queue_size = 32
queue_timeout = "2s"
shards = 100
disk = "1gb"
memory = "256mb"
max_bulk_actions = 10000
{clusters}"""


class Tenant:
    def __init__(self, addr, cid):
        self.addr = addr
        self.host = f"{cid}.r1.{DOMAIN}"
        token = base64.b64encode(f"{cid}user:{cid}pass".encode()).decode()
        self.auth = f"Basic {token}"
        self.conn = None

    def headers(self, ctype=None):
        h = {"Host": self.host, "Authorization": self.auth}
        if ctype:
            h["Content-Type"] = ctype
        return h

    def call(self, method, path, body=None, ctype="application/json", timeout=10):
        """One request on the tenant's keep-alive connection: (status, body bytes)."""
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(*self.addr, timeout=timeout)
            try:
                if isinstance(body, (dict, list)):
                    body = json.dumps(body)
                self.conn.request(method, path, body=body, headers=self.headers(ctype if body else None))
                r = self.conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, data
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    return 0, b""
        return 0, b""


def quiet_round(t, n, lat):
    """One round of the quiet mix; appends latencies (s); returns the failures."""
    failed = 0
    lines = []
    for i in range(10):
        lines.append(json.dumps({"index": {"_index": "docs", "_id": f"{n}-{i}"}}))
        lines.append(json.dumps({"n": n, "i": i}))
    steps = [
        ("POST", "/_bulk", "\n".join(lines) + "\n", "application/x-ndjson"),
        ("POST", "/docs/_search", {"query": {"match_all": {}}}, "application/json"),
        ("GET", "/docs/_search?scroll=1m&size=5", None, None),
    ]
    scroll_id = None
    for method, path, body, ctype in steps:
        t0 = time.perf_counter()
        status, data = t.call(method, path, body, ctype or "application/json")
        lat.append(time.perf_counter() - t0)
        if not 200 <= status < 300:
            failed += 1
        elif path.startswith("/_bulk") and json.loads(data).get("errors"):
            failed += 1
        elif "scroll=" in path:
            scroll_id = json.loads(data).get("_scroll_id")
    if scroll_id:
        t0 = time.perf_counter()
        status, _ = t.call("DELETE", "/_search/scroll", {"scroll_id": scroll_id})
        lat.append(time.perf_counter() - t0)
        failed += status != 200
    return failed


def raw(addr, data, wait=True):
    try:
        s = socket.create_connection(addr, timeout=2)
        s.sendall(data)
        if wait:
            s.recv(4096)
        s.close()
    except OSError:
        pass


def hostile_worker(addr, seconds, seed):
    """One hostile process: the patterns of tests/it/defence_noisy.rs in a loop."""
    t = Tenant(addr, "noisy")
    deep = '{"bool":{"must":' * 3000 + "{}" + "}}" * 3000
    # an aggregation of 20,000 ranges, each one a query: seconds of engine work, abandoned
    # by the client after its timeout (the engine stops it when the edge drops the request)
    heavy = {"size": 0, "aggs": {"r": {"range": {"field": "n", "ranges": [{"from": i, "to": i + 1} for i in range(20000)]}}}}
    reqs = [
        ("GET", "/big/_search?scroll=150000000000000d", None),
        ("POST", "/big/_pit?keep_alive=99999999999999999999d", None),
        ("GET", "/big/_search?scroll=1%20h", None),
        ("GET", "/big/_search?scroll=5m&size=1", None),
        ("POST", "/big/_pit?keep_alive=5m", None),
        ("GET", "/big/_search?size=2147483648&from=-1", None),
        ("GET", "/_cluster/health/missing?wait_for_status=green&timeout=1h", None),
        ("POST", "/big/_search", '{"query":' + deep + "}"),
        ("POST", "/big/_search", {"size": 1e300, "timeout": "999999999d"}),
        ("POST", "/big/_search", {"query": {"query_string": {"query": "(" * 100000 + "a" + ")" * 100000}}}),
        ("POST", "/big/_update_by_query", {"script": {"source": "ctx._source.s = 'ab'; " + "ctx._source.s += ctx._source.s; " * 40}}),
        ("POST", "/big/_search", heavy),
    ]
    end = time.time() + seconds
    while time.time() < end:
        for method, path, body in reqs:
            t.call(method, path, body, timeout=1 if body is heavy else 6)
        raw(addr, b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")
        raw(addr, b"A" * 70000)
        half = f"POST /big/_doc HTTP/1.1\r\nHost: {t.host}\r\nAuthorization: {t.auth}\r\n"
        raw(addr, (half + "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{").encode(), wait=False)


def slowloris(addr, seconds):
    t = Tenant(addr, "noisy")
    end = time.time() + seconds
    head = f"GET /big/_search HTTP/1.1\r\nHost: {t.host}\r\nAuthorization: ".encode()
    while time.time() < end:
        held = []
        for _ in range(30):
            try:
                s = socket.create_connection(addr, timeout=2)
                s.sendall(head)
                held.append(s)
            except OSError:
                pass
        time.sleep(0.7)
        for s in held:
            s.close()


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, round((len(v) - 1) * p))]


def phase(addr, seconds, noisy, workers):
    procs = []
    if noisy:
        procs = [multiprocessing.Process(target=hostile_worker, args=(addr, seconds, i)) for i in range(workers)]
        procs.append(multiprocessing.Process(target=slowloris, args=(addr, seconds)))
        for p in procs:
            p.start()
        time.sleep(0.5)  # let the noise build up before measuring
    t = Tenant(addr, "quiet")
    lat, failed, n = [], 0, 0
    end = time.time() + seconds
    while time.time() < end:
        failed += quiet_round(t, n, lat)
        n += 1
    for p in procs:
        p.join(timeout=seconds + 15)
        if p.is_alive():
            p.kill()
    return {"requests": len(lat), "failed": failed, "p50": percentile(lat, 0.5) * 1e3, "p99": percentile(lat, 0.99) * 1e3}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "searchgate"))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--noisy-workers", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2, help="edge worker threads")
    a = ap.parse_args()
    dir_ = tempfile.mkdtemp(prefix="noisy-")
    path = os.path.join(dir_, "searchgate.toml")
    with open(path, "w") as f:
        f.write(config(dir_))
    try:
        edge = start([a.bin, "serve", "--config", path, "--threads", str(a.threads)], None, cwd=dir_)
        line = wait_line(edge, "searchgate: listening", timeout=120)
        drain(edge)
        host, port = line.split("http=")[1].split()[0].rsplit(":", 1)
        addr = (host, int(port))
        quiet, noisy = Tenant(addr, "quiet"), Tenant(addr, "noisy")
        for t, name in ((quiet, "docs"), (noisy, "big")):
            body = {"settings": {"number_of_shards": 5, "number_of_replicas": 0}}
            status, data = t.call("PUT", f"/{name}", body)
            assert status == 200, data
        # the hostile tenant's documents, for its scripts and aggregations to chew on
        lines = []
        for i in range(2000):
            lines.append(json.dumps({"index": {"_index": "big", "_id": str(i)}}))
            lines.append(json.dumps({"n": i}))
        status, data = noisy.call("POST", "/_bulk?refresh=true", "\n".join(lines) + "\n", "application/x-ndjson")
        assert status == 200 and not json.loads(data)["errors"], data[:300]
        order = []
        for r in range(a.rounds):
            order += [False, True] if r % 2 == 0 else [True, False]
        results = {False: [], True: []}
        print(f"# {a.rounds} rounds of {a.seconds}s per phase, {a.noisy_workers} hostile processes + slowloris, edge --threads {a.threads}")
        print(f"{'phase':8} {'requests':>9} {'failed':>7} {'p50 ms':>8} {'p99 ms':>8}")
        for noisy_phase in order:
            res = phase(addr, a.seconds, noisy_phase, a.noisy_workers)
            results[noisy_phase].append(res)
            name = "noisy" if noisy_phase else "quiet"
            print(f"{name:8} {res['requests']:9d} {res['failed']:7d} {res['p50']:8.2f} {res['p99']:8.2f}", flush=True)
        print()
        for key in ("p50", "p99"):
            q = [r[key] for r in results[False]]
            n = [r[key] for r in results[True]]
            ratios = [b / a_ for a_, b in zip(q, n)]
            print(
                f"{key}: quiet median {statistics.median(q):.2f} ms ({min(q):.2f}-{max(q):.2f}), "
                f"noisy median {statistics.median(n):.2f} ms ({min(n):.2f}-{max(n):.2f}), "
                f"ratio noisy/quiet median {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
            )
        failed = sum(r["failed"] for rs in results.values() for r in rs)
        print(f"failed quiet requests: {failed}")
        return 1 if failed else 0
    finally:
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
