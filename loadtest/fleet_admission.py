#!/usr/bin/env python3
"""The cost of admitting a request away from its cluster's home (issue 27).

Starts a throw-away PostgreSQL (as loadtest/fleet.py does), the fast upstream
(`loadtest_upstream`) and two `searchgate serve --threads 1` nodes on that store with
`[fleet] peer_listen`, and one single-tenant cluster (concurrency 64). One node is the
cluster's home (read from `/metrics`); the other must ask it for a permit for every
request. One client on a kept-alive connection sends --requests small searches, then
--bulks 5MB `_bulk` bodies, first to the home, then to the other node, and prints for each:
p50/p99 latency in µs, the added latency (away minus home), and the CPU both nodes used
per request.

    python3 loadtest/fleet_admission.py [--requests 5000] [--bulks 40] [--skip-build]

Everything listens on 127.0.0.1 only, and every process is stopped at the end.
"""

import argparse
import base64
import http.client
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procs import cleanup, cpu_ns, drain, free_port, log, start, wait_line  # noqa: E402
from fleet import ROOT, release_bin, start_pg  # noqa: E402

USER, PASSWORD = "benchuser", "benchpass"
HOST = "bench.r1.localhost"


def node_config(work, name, url, upstream):
    http_port, metrics_port, peer_port = free_port(), free_port(), free_port()
    d = os.path.join(work, name)
    os.makedirs(d)
    text = f"""[edge]
domain = "localhost"
http = "127.0.0.1:{http_port}"
metrics = "127.0.0.1:{metrics_port}"
data_dir = "{d}/data"
access_log = "off"
metering_interval = "1h"
max_body = "10mb"

[store]
url = "{url}"

[fleet]
node_id = "{name}"
peer_listen = "127.0.0.1:{peer_port}"

[[plans]]
name = "p"
concurrency = 64
queue_size = 64
queue_timeout = "5s"
shards = 100
disk = "1gb"
memory = "256mb"
max_bulk_actions = 1000000

[[clusters]]
id = "bench"
hostname = "bench"
region = "r1"
class = "single-tenant"
plan = "p"
username = "{USER}"
password = "{PASSWORD}"
upstream = ["{upstream}"]
"""
    path = os.path.join(d, "searchgate.toml")
    with open(path, "w") as f:
        f.write(text)
    return path, http_port, metrics_port


def series(metrics_port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def run(port, method, path, body, n):
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    headers = {"Host": HOST, "Authorization": f"Basic {auth}", "Content-Type": "application/x-ndjson"}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        r.read()
        times.append((time.perf_counter_ns() - t0) / 1000)
        if r.status != 200:
            raise RuntimeError(f"{method} {path}: {r.status}")
    c.close()
    return sorted(times)


def pct(s, q):
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def measure(label, nodes, pids, method, path, body, n):
    rows = {}
    for where, port in nodes:
        run(port, method, path, body, max(10, n // 10))  # warm up (pooled connections)
        cpu0 = cpu_ns(pids)
        s = run(port, method, path, body, n)
        cpu = (cpu_ns(pids) - cpu0) / n / 1000
        rows[where] = (pct(s, 0.5), pct(s, 0.99), cpu)
        print(f"{label:14} {where:5} p50 {rows[where][0]:9.1f} µs  p99 {rows[where][1]:9.1f} µs  CPU {cpu:8.1f} µs/request")
    (h50, h99, hcpu), (a50, a99, acpu) = rows["home"], rows["away"]
    print(f"{label:14} added p50 {a50 - h50:+9.1f} µs  p99 {a99 - h99:+9.1f} µs  CPU {acpu - hcpu:+8.1f} µs/request")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--bulks", type=int, default=40)
    ap.add_argument("--skip-build", action="store_true")
    args = ap.parse_args()
    if not args.skip_build:
        log("building searchgate and the upstream (release)...")
        subprocess.run(["cargo", "build", "--release", "--bin", "searchgate"], cwd=ROOT, check=True)
        subprocess.run(["cargo", "build", "--release", "--example", "loadtest_upstream"], cwd=ROOT, check=True)
    exe = release_bin()
    upstream_exe = os.path.join(os.path.dirname(exe), "examples", "loadtest_upstream")
    work = tempfile.mkdtemp(prefix="sg-fleet-admission-")
    stop_pg = None
    try:
        url, stop_pg = start_pg(work)
        up_port = free_port()
        up = start([upstream_exe, "--listen", f"127.0.0.1:{up_port}"], None)
        wait_line(up, "upstream: listening")
        drain(up)
        nodes, procs = [], []
        for name in ("a", "b"):
            path, http_port, metrics_port = node_config(work, name, url, f"127.0.0.1:{up_port}")
            p = start([exe, "serve", "--config", path, "--threads", "1"], None)
            wait_line(p, "searchgate: listening", timeout=60)
            drain(p)
            nodes.append((http_port, metrics_port))
            procs.append(p.pid)
        deadline = time.time() + 20
        while time.time() < deadline:
            homes = [series(m, "searchgate_fleet_homes") for _, m in nodes]
            seen = [series(m, "searchgate_fleet_nodes") for _, m in nodes]
            if seen == [2.0, 2.0] and sorted(homes) == [0.0, 1.0]:
                break
            time.sleep(0.2)
        else:
            raise RuntimeError(f"the nodes never agreed: homes {homes}, nodes {seen}")
        home = homes.index(1.0)
        order = [("home", nodes[home][0]), ("away", nodes[1 - home][0])]
        small = None
        measure("small search", order, procs, "GET", "/books/_search", small, args.requests)
        line = b'{"index":{"_index":"books"}}\n{"title":"' + b"x" * 200 + b'"}\n'
        bulk = line * ((5 << 20) // len(line))
        measure("5MB bulk", order, procs, "POST", "/_bulk", bulk, args.bulks)
    finally:
        cleanup()
        if stop_pg:
            stop_pg()


if __name__ == "__main__":
    main()
