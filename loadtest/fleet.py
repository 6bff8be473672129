#!/usr/bin/env python3
"""Fleet propagation (issue 26): how long a change committed through one node's admin API
takes to be served by another node's edge.

Starts a throw-away PostgreSQL (Debian's package; initdb/pg_ctl as `postgres` when run as
root) on a free 127.0.0.1 port, one `searchgate engine` as the shared upstream and --nodes
`searchgate serve` nodes on that store. Creates one cluster through node A, then makes
--changes credential rotations through A, one at a time (--pause between them): for each,
the time from A's answer (the change is committed) until node B answers the new password
with 200 (B polls it on a kept-alive connection; before B applied the change it answers
401). Prints p50/p99/max in milliseconds, from A's answer and from the request's start.

    python3 loadtest/fleet.py [--changes 200] [--nodes 2] [--pause 0] [--skip-build]

At scale (--clusters N): N multitenant clusters are written straight into the empty store
(psql COPY: records as the store keeps them, one batch of the feed) before the nodes
start; then the --nodes nodes start one after the other. Prints each node's boot time
(process start to `listening`) and memory (resident, less that of a node started on an
empty store: per cluster), then for each rate of --rates (changes per second, open loop
for --seconds each) the propagation p50/p99/max: each change rotates the credentials of
its own cluster through node (i mod nodes) and is timed from that node's answer until
node (i+1 mod nodes) answers the new password with 200.

    python3 loadtest/fleet.py --skip-build --nodes 10 --clusters 100000 --rates 1,10,100

Everything listens on 127.0.0.1 only, and every process is stopped at the end.
"""

import argparse
import base64
import glob
import hashlib
import hmac
import threading
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from procs import cleanup, drain, free_port, log, start, wait_line  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "fleet-loadtest-token-0123456789"


def release_bin():
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target, "release", "searchgate")


def pg_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        log("installing postgresql (apt-get)...")
        subprocess.run(["apt-get", "update"], check=False)
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "postgresql"],
                       check=True, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return os.path.dirname(found[-1])


def as_pg(cmd):
    return (["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []) + cmd


def start_pg(work):
    """initdb + pg_ctl start on a free port; returns (url, stop function)."""
    bindir = pg_bin()
    pgdir = os.path.join(work, "pg")
    os.makedirs(pgdir)
    if os.geteuid() == 0:
        shutil.chown(work, "postgres", "postgres")
        shutil.chown(pgdir, "postgres", "postgres")
    data = os.path.join(pgdir, "data")
    subprocess.run(as_pg([f"{bindir}/initdb", "--auth=trust", "--username=searchgate",
                          "--no-sync", "-D", data]), check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    opts = f"-p {port} -k {pgdir} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(as_pg([f"{bindir}/pg_ctl", "-w", "-D", data, "-l", f"{pgdir}/log",
                          "-o", opts, "start"]), check=True, stdout=subprocess.DEVNULL)

    def stop():
        subprocess.run(as_pg([f"{bindir}/pg_ctl", "-m", "immediate", "-D", data, "stop"]),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    return f"postgres://searchgate@127.0.0.1:{port}/postgres", stop


def node_config(work, name, url, engine_port, metering="1h"):
    http_port, admin_port = free_port(), free_port()
    d = os.path.join(work, name)
    os.makedirs(d)
    text = f"""[edge]
domain = "localhost"
http = "127.0.0.1:{http_port}"
data_dir = "{d}/data"
access_log = "off"
metering_interval = "{metering}"

[admin]
listen = "127.0.0.1:{admin_port}"
token = "{TOKEN}"
shared_upstreams = ["127.0.0.1:{engine_port}"]

[store]
url = "{url}"

[fleet]
node_id = "{name}"

[[plans]]
name = "p"
concurrency = 16
queue_size = 64
queue_timeout = "5s"
shards = 100
disk = "1gb"
memory = "256mb"
max_bulk_actions = 10000
"""
    path = os.path.join(d, "searchgate.toml")
    with open(path, "w") as f:
        f.write(text)
    return path, http_port, admin_port


def admin_call(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status >= 300:
        raise RuntimeError(f"{method} {path}: {r.status} {data[:300]!r}")
    return json.loads(data)


class Edge:
    """A kept-alive client of one node's edge."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def status(self, host, user, password):
        auth = base64.b64encode(f"{user}:{password}".encode()).decode()
        for _ in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                self.conn.request("GET", "/", headers={"Host": host, "Authorization": f"Basic {auth}"})
                r = self.conn.getresponse()
                r.read()
                if r.getheader("connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
        raise RuntimeError("the edge does not answer")


def wait_served(edge, host, user, password, timeout=30):
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        if edge.status(host, user, password) == 200:
            return time.perf_counter()
    raise RuntimeError(f"not served within {timeout}s")


def b64(raw):
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def load_clusters(work, url, n, engine_port):
    """Writes `n` multitenant clusters (ids c000000.., password = id) into the store's
    `clusters` table and one batch of the feed, as the store writes them."""
    path = os.path.join(work, "clusters.tsv")
    with open(path, "w") as f:
        for i in range(n):
            cid = f"c{i:06d}"
            salt = os.urandom(16)
            tag = hmac.new(salt, cid.encode(), hashlib.sha256).digest()
            rec = {
                "id": cid, "name": None, "hostname": cid, "region": "bench",
                "class": "multitenant", "plan": "p", "username": f"{cid}u",
                "password": f"hmac-sha256${b64(salt)}${b64(tag)}", "previous": None,
                "mode": "normal", "mode_reason": None, "mode_until": None,
                "upstream": [f"127.0.0.1:{engine_port}"], "source": "api", "created_at": 0,
                "provisioned_at": 0, "destroyed_at": None, "purged": False, "version": 1,
            }
            text = json.dumps(rec, separators=(",", ":")).replace("\\", "\\\\")
            f.write(f"{cid}\trunning\tp\t{text}\n")
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")
    psql = os.path.join(pg_bin(), "psql")
    sql = (f"\\copy clusters (id, state, plan, record) FROM '{path}'\n"
           "INSERT INTO changes (seq, at, events) "
           "SELECT COALESCE(MAX(seq), 0) + 1, 0, '[]' FROM changes;\n")
    subprocess.run(as_pg([psql, "-q", "-v", "ON_ERROR_STOP=1", url]), input=sql, text=True,
                   check=True)


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def start_node(exe, work, name, url, engine_port):
    """Starts node `name`; returns (process, http port, admin port, seconds to listen)."""
    path, http_port, admin_port = node_config(work, name, url, engine_port)
    t0 = time.perf_counter()
    p = start([exe, "serve", "--config", path, "--threads", "1"], None)
    wait_line(p, "searchgate: listening", timeout=600)
    boot = time.perf_counter() - t0
    drain(p)
    return p, http_port, admin_port, boot


def rotate_and_wait(nodes, i, cluster, results, failed):
    """Change `i`: rotates `cluster` through node i, waits for node i+1 to serve it (a
    change whose admin call or propagation takes over 30 s counts as failed)."""
    _, a_admin = nodes[i % len(nodes)]
    b_http, _ = nodes[(i + 1) % len(nodes)]
    cid, host = cluster
    try:
        r = admin_call(a_admin, "POST", f"/v1/clusters/{cid}/credentials/rotate", {})
        t1 = time.perf_counter()
        t2 = wait_served(Edge(b_http), host, r["username"], r["password"])
        results.append((t2 - t1) * 1000)
    except (RuntimeError, OSError, http.client.HTTPException) as e:
        failed.append(str(e))


def propagation_at(nodes, clusters, rate, seconds):
    """Changes at `rate` per second for `seconds` (open loop: each in its own thread);
    returns the propagation times in ms, sorted."""
    results, failed, threads = [], [], []
    total = max(1, int(rate * seconds))
    t0 = time.perf_counter()
    for i in range(total):
        due = t0 + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        th = threading.Thread(target=rotate_and_wait,
                              args=(nodes, i, clusters[i % len(clusters)], results, failed))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    achieved = total / max(1e-9, time.perf_counter() - t0)
    for why in sorted(set(failed))[:3]:
        log(f"  failed: {why[:200]}")
    return sorted(results), achieved, len(failed)


def scale(args, exe, work):
    """The 100k-cluster run (see the module's docs)."""
    url, stop_pg = start_pg(work)
    try:
        engine_port = free_port()
        eng = start([exe, "engine", "--listen", f"127.0.0.1:{engine_port}",
                     "--data-dir", os.path.join(work, "engine")], None)
        wait_line(eng, "")
        drain(eng)
        p, _, _, boot = start_node(exe, work, "empty", url, engine_port)
        base = rss_bytes(p.pid)
        log(f"a node on an empty store: boot {boot:.2f} s, {base / 2**20:.1f} MiB resident")
        p.terminate()
        p.wait()
        t = time.perf_counter()
        load_clusters(work, url, args.clusters, engine_port)
        log(f"{args.clusters} clusters written to the store in {time.perf_counter() - t:.1f} s")
        nodes, boots, rss = [], [], []
        for i in range(args.nodes):
            p, http_port, admin_port, boot = start_node(exe, work, f"n{i + 1}", url, engine_port)
            nodes.append((http_port, admin_port))
            boots.append(boot)
            rss.append(rss_bytes(p.pid))
        per = [(r - base) / max(1, args.clusters) for r in rss]
        log(f"{args.nodes} nodes at {args.clusters} clusters: boot {min(boots):.2f}-{max(boots):.2f} s "
            f"(mean {sum(boots) / len(boots):.2f} s, one after the other), resident "
            f"{min(rss) / 2**20:.0f}-{max(rss) / 2**20:.0f} MiB, "
            f"{sum(per) / len(per):.0f} bytes per cluster per node")
        with open("/proc/loadavg") as f:
            log(f"load average now: {f.read().split()[0]}")
        per_rate = max(int(r * args.seconds) for r in args.rates)
        clusters = [(f"c{i:06d}", f"c{i:06d}.bench.localhost")
                    for i in range(min(args.clusters, per_rate))]
        for rate in args.rates:
            xs, achieved, failed = propagation_at(nodes, clusters, rate, args.seconds)
            with open("/proc/loadavg") as f:
                load = f.read().split()[0]
            figures = (f"p50 {pct(xs, 0.5):.1f} ms, p99 {pct(xs, 0.99):.1f} ms, max {xs[-1]:.1f} ms"
                       if xs else "none served")
            log(f"propagation at {rate} changes/s (achieved {achieved:.1f}/s, {len(xs)} changes, "
                f"{failed} failed or over 30 s, {args.nodes} nodes, {args.clusters} clusters, "
                f"load {load}): {figures}")
    finally:
        cleanup()
        stop_pg()


def pct(sorted_ms, q):
    return sorted_ms[min(len(sorted_ms) - 1, int(round(q * (len(sorted_ms) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--changes", type=int, default=200)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--pause", type=float, default=0.0, help="seconds between changes")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--clusters", type=int, default=0,
                    help="clusters written into the store before the nodes start (scale run)")
    ap.add_argument("--rates", default="1,10,100",
                    help="changes per second of the scale run, comma-separated")
    ap.add_argument("--seconds", type=float, default=10.0,
                    help="how long each rate of the scale run lasts")
    args = ap.parse_args()
    args.rates = [float(r) for r in args.rates.split(",") if r]
    if not args.skip_build:
        log("building searchgate (release)...")
        subprocess.run(["cargo", "build", "--release", "--bin", "searchgate"], cwd=ROOT, check=True)
    exe = release_bin()
    work = tempfile.mkdtemp(prefix="sg-fleet-")
    if args.clusters > 0:
        try:
            scale(args, exe, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    stop_pg = None
    try:
        url, stop_pg = start_pg(work)
        engine_port = free_port()
        eng = start([exe, "engine", "--listen", f"127.0.0.1:{engine_port}",
                     "--data-dir", os.path.join(work, "engine")], None)
        wait_line(eng, "")
        drain(eng)
        nodes = []
        for i in range(args.nodes):
            path, http_port, admin_port = node_config(work, f"n{i + 1}", url, engine_port)
            p = start([exe, "serve", "--config", path, "--threads", "1"], None)
            wait_line(p, "searchgate: listening", timeout=60)
            drain(p)
            nodes.append((http_port, admin_port))
        (_, a_admin), (b_http, _) = nodes[0], nodes[-1]
        created = admin_call(a_admin, "POST", "/v1/clusters", {"plan": "p"})
        cid = created["id"]
        host = f"{created['hostname']}.{created['region']}.localhost"
        b = Edge(b_http)
        wait_served(b, host, created["username"], created["password"])
        log(f"{args.nodes} nodes on PostgreSQL; {args.changes} rotations through node 1, "
            f"each until node {args.nodes} serves the new password")
        from_answer, from_start = [], []
        for _ in range(args.changes):
            t0 = time.perf_counter()
            r = admin_call(a_admin, "POST", f"/v1/clusters/{cid}/credentials/rotate", {})
            t1 = time.perf_counter()
            t2 = wait_served(b, host, r["username"], r["password"])
            from_answer.append((t2 - t1) * 1000)
            from_start.append((t2 - t0) * 1000)
            if args.pause:
                time.sleep(args.pause)
        for name, xs in [("from A's answer", from_answer), ("from the request's start", from_start)]:
            xs.sort()
            log(f"propagation {name}: p50 {pct(xs, 0.5):.2f} ms, p99 {pct(xs, 0.99):.2f} ms, "
                f"max {xs[-1]:.2f} ms ({len(xs)} changes)")
    finally:
        cleanup()
        if stop_pg:
            stop_pg()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
