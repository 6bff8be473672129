#!/usr/bin/env python3
"""Searches through a 3-node upstream pool while one node is killed and restarted (issue 28).

Starts three `searchgate engine` nodes on free 127.0.0.1 ports (each with the same small
index), and `searchgate serve` with one `[[upstream_pools]]` of the three and one cluster
naming it. --clients threads search steadily on kept-alive connections for --seconds; at
--kill-at the second node is killed (SIGKILL), at --restart-at it is started again on the
same port and data. Each second, every answer's latency goes into that second's histogram
(log-spaced buckets, 1.1x apart); the table printed at the end has, per second, the
answers, the errors (any status but 200, or no answer), p50/p99/max latency from the
histogram, and, scraped from the edge's metrics once a second, the killed node's state,
its ejections and the edge's retries by reason. The metrics must show the node leave
(`down` or `ejected`) and come back (`up`).

    python3 loadtest/failover.py [--seconds 30] [--clients 8] [--kill-at 8] [--restart-at 16]
                                 [--skip-build]

Everything listens on 127.0.0.1 only; every process is stopped at the end.
"""

import argparse
import base64
import http.client
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet import release_bin  # noqa: E402
from procs import cleanup, drain, free_port, log, start, wait_line, wait_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER, PASSWORD = "pooluser", "poolpass"
HOST = "pool-h.local.localhost"
RATIO = 1.1  # histogram buckets: [RATIO^k, RATIO^(k+1)) microseconds


class Histogram:
    """Latencies in log-spaced buckets (about 5 % wide): what a second's percentiles are
    read from."""

    def __init__(self):
        self.buckets = {}
        self.count = 0
        self.max_us = 0

    def record(self, us):
        k = int(math.log(max(us, 1), RATIO))
        self.buckets[k] = self.buckets.get(k, 0) + 1
        self.count += 1
        self.max_us = max(self.max_us, us)

    def quantile(self, q):
        if self.count == 0:
            return 0.0
        rank = q * self.count
        seen = 0
        for k in sorted(self.buckets):
            seen += self.buckets[k]
            if seen >= rank:
                return RATIO ** (k + 1)  # the bucket's upper bound
        return float(self.max_us)


def engine(bin_, port, data):
    p = start([bin_, "engine", "--listen", f"127.0.0.1:{port}", "--data-dir", data], None)
    wait_line(p, "searchgate engine listening", 60)
    drain(p)
    return p


def seed_node(port):
    """The same index and documents on a node (the nodes are independent engines)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("PUT", "/docs", body=json.dumps({"settings": {"number_of_shards": 1}}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    lines = []
    for i in range(200):
        lines.append(json.dumps({"index": {"_index": "docs", "_id": str(i)}}))
        lines.append(json.dumps({"title": f"document {i} about pools", "n": i}))
    c.request("POST", "/_bulk?refresh=true", body="\n".join(lines) + "\n",
              headers={"Content-Type": "application/x-ndjson"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        raise RuntimeError(f"seeding node {port}: {r.status}")
    c.close()


def edge_config(work, ports, http_port, metrics_port):
    nodes = ", ".join(f'"127.0.0.1:{p}"' for p in ports)
    text = f"""[edge]
domain = "localhost"
http = "127.0.0.1:{http_port}"
metrics = "127.0.0.1:{metrics_port}"
data_dir = "{work}/edge"
route_by_username = true
access_log = "off"
connect_timeout = "1s"
metering_interval = "1h"

[upstream_health]
interval = "500ms"
timeout = "300ms"
rise = 2
fall = 2
passive_failures = 3
eject_base = "2s"

[[upstream_pools]]
name = "three"
nodes = [{nodes}]

[[plans]]
name = "load"
concurrency = 64
queue_size = 256
queue_timeout = "5s"
shards = 10
disk = "1gb"
memory = "256mb"
max_bulk_actions = 10000

[[clusters]]
id = "pool"
hostname = "pool-h"
region = "local"
class = "single-tenant"
plan = "load"
username = "{USER}"
password = "{PASSWORD}"
upstream = "three"
"""
    path = os.path.join(work, "edge.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


class Load:
    """--clients threads searching; per second: a histogram and an error count."""

    def __init__(self, http_port, seconds, clients):
        self.port = http_port
        self.t0 = time.perf_counter()
        self.end = self.t0 + seconds
        self.hists = [Histogram() for _ in range(seconds + 1)]
        self.errors = [0] * (seconds + 1)
        self.lock = threading.Lock()
        auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        self.headers = {"Host": HOST, "Authorization": f"Basic {auth}",
                        "Content-Type": "application/json"}
        self.body = json.dumps({"query": {"match": {"title": "pools"}}, "size": 5})
        self.threads = [threading.Thread(target=self.client, daemon=True) for _ in range(clients)]

    def client(self):
        conn = None
        while True:
            start_t = time.perf_counter()
            if start_t >= self.end:
                return
            ok = False
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("POST", "/docs/_search", body=self.body, headers=self.headers)
                r = conn.getresponse()
                r.read()
                ok = r.status == 200
                if r.getheader("connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (http.client.HTTPException, OSError):
                if conn is not None:
                    conn.close()
                conn = None
            done = time.perf_counter()
            sec = min(int(done - self.t0), len(self.hists) - 1)
            with self.lock:
                if ok:
                    self.hists[sec].record((done - start_t) * 1e6)
                else:
                    self.errors[sec] += 1

    def run(self):
        for t in self.threads:
            t.start()

    def join(self):
        for t in self.threads:
            t.join()


def scrape(metrics_port, node):
    """The node's state, its ejections, and retries by reason, from the edge's metrics."""
    c = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=5)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    state, ejections, retries = "?", 0, {}
    for line in text.splitlines():
        if line.startswith(f'searchgate_upstream_node_up{{node="{node}",state="'):
            state = line.split('state="')[1].split('"')[0]
        elif line.startswith(f'searchgate_upstream_node_ejections_total{{node="{node}"'):
            ejections = int(float(line.split()[-1]))
        elif line.startswith("searchgate_upstream_retries_total{"):
            reason = line.split('reason="')[1].split('"')[0]
            retries[reason] = int(float(line.split()[-1]))
    return state, ejections, retries


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--kill-at", type=float, default=8)
    ap.add_argument("--restart-at", type=float, default=16)
    ap.add_argument("--skip-build", action="store_true")
    args = ap.parse_args()
    if not args.skip_build:
        subprocess.run(["cargo", "build", "--release", "--bin", "searchgate"], cwd=ROOT, check=True)
    bin_ = release_bin()
    work = tempfile.mkdtemp(prefix="searchgate-failover-")
    try:
        ports = [free_port() for _ in range(3)]
        datas = [os.path.join(work, f"node{i}") for i in range(3)]
        nodes = [engine(bin_, p, d) for p, d in zip(ports, datas)]
        for p in ports:
            seed_node(p)
        http_port, metrics_port = free_port(), free_port()
        edge = start([bin_, "serve", "--config", edge_config(work, ports, http_port, metrics_port)], None)
        wait_line(edge, "searchgate: listening", 60)
        drain(edge)
        victim = f"127.0.0.1:{ports[1]}"
        load = Load(http_port, args.seconds, args.clients)
        log(f"searching for {args.seconds}s with {args.clients} clients; node {victim} is killed "
            f"at {args.kill_at}s and restarted at {args.restart_at}s")
        load.run()
        states = []
        killed = restarted = False
        for sec in range(args.seconds):
            while time.perf_counter() < load.t0 + sec + 1:
                now = time.perf_counter() - load.t0
                if not killed and now >= args.kill_at:
                    nodes[1].send_signal(signal.SIGKILL)
                    nodes[1].wait()
                    killed = True
                if killed and not restarted and now >= args.restart_at:
                    nodes[1] = engine(bin_, ports[1], datas[1])
                    wait_port(ports[1])
                    restarted = True
                time.sleep(0.02)
            states.append(scrape(metrics_port, victim))
        load.join()
        log(f"{'sec':>4} {'ok':>6} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  "
            f"{'node':<8} {'ejections':>9}  retries")
        for sec in range(args.seconds):
            h = load.hists[sec]
            state, ej, retries = states[sec]
            mark = " <- killed" if int(args.kill_at) == sec else (
                " <- restarted" if int(args.restart_at) == sec else "")
            log(f"{sec:>4} {h.count:>6} {load.errors[sec]:>6} {h.quantile(0.5) / 1000:>8.2f} "
                f"{h.quantile(0.99) / 1000:>8.2f} {h.max_us / 1000:>8.2f}  {state:<8} {ej:>9}  "
                f"{retries}{mark}")
        total = sum(h.count for h in load.hists)
        errors = sum(load.errors)
        seen = [s for s, _, _ in states]
        left = any(s in ("down", "ejected") for s in seen)
        back = left and seen[-1] == "up"
        log(f"total: {total} searches, {errors} errors ({total / args.seconds:.0f}/s); "
            f"the killed node left the pool: {left}, came back: {back}")
        if not (left and back):
            sys.exit("the metrics did not show the node leave and come back")
    finally:
        cleanup()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
