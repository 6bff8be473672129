#!/usr/bin/env python3
"""Tenancy benchmark: the cost of the multitenant class's rewriting (issue 5).

One searchgate (`--threads 1`, pinned to core 0) serves two clusters with the same plan:
`mt` (multitenant: index names namespaced in paths and bodies, responses un-rewritten and
re-framed chunked) and `st` (single-tenant: passed through). Each has an upstream of its
own (a multitenant upstream cannot be shared with a single-tenant cluster), both the same
program pinned to core 1 with wrk: the fast upstream (`loadtest/upstream.rs`, default) or
the embedded engine in release mode (`--upstream engine`, each preloaded with the indices
the scenarios use, created through the edge so the multitenant one holds prefixed names).

For each scenario, wrk runs the same load against `mt` and `st` in turn (ABBA order over
the rounds, so slow drifts of the machine hit both alike), and the runner prints req/s,
p50/p99/p99.9 and the edge's CPU per request for both, and the median of the per-round
ratios mt/st: the cost of rewriting. Scenarios: `plain` (small searches, search.lua) and
`bulk` (`_bulk` bodies, bulk.lua; default 1MB bodies). Everything listens on 127.0.0.1,
every run is bounded in time, and every process started here is stopped at the end.

Usage: loadtest/tenancy_bench.sh [options]   (see --help; installs wrk and taskset)
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import run  # noqa: E402  (the load test's process, wrk and measurement helpers)
from run import LOAD_CORE, PROXY_CORE, Target, log  # noqa: E402

CLASSES = ("mt", "st")
TENANTS = {
    "mt": {"id": "mt", "host": "mt.r1.localhost", "user": "mtuser", "pass": "mtpass1",
           "class": "multitenant"},
    "st": {"id": "st", "host": "st.r1.localhost", "user": "stuser", "pass": "stpass1",
           "class": "single-tenant"},
}


def write_config(work, args, upstreams):
    """searchgate's config: one roomy plan, the two clusters, each on its own upstream."""
    lines = [
        "[edge]",
        'domain = "localhost"',
        'http = "127.0.0.1:0"',
        f'data_dir = "{os.path.join(work, "edge")}"',
        f'access_log = "{"off" if args.access_log == "off" else os.path.join(work, "access.log")}"',
        "",
        "[[plans]]",
        'name = "load"',
        "concurrency = 4096",
        "queue_size = 4096",
        'queue_timeout = "5s"',
        "shards = 100",
        'disk = "100gb"',
        'memory = "1gb"',
        "max_bulk_actions = 1000000",
        "",
    ]
    for c in CLASSES:
        t = TENANTS[c]
        lines += [
            "[[clusters]]",
            f'id = "{t["id"]}"',
            f'hostname = "{t["id"]}"',
            'region = "r1"',
            f'class = "{t["class"]}"',
            'plan = "load"',
            f'username = "{t["user"]}"',
            f'password = "{t["pass"]}"',
            f'upstream = ["{upstreams[c]}"]',
            "",
        ]
    path = os.path.join(work, "searchgate.toml")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def start_upstream(args, work, name):
    """One upstream on core 1; returns (address, pid)."""
    rel = run.release_dir()
    if args.upstream == "fast":
        p = run.start([os.path.join(rel, "examples", "loadtest_upstream"),
                       "--driver", args.upstream_driver], LOAD_CORE)
        addr = run.wait_line(p, "upstream: listening").split()[-1]
    else:
        data = os.path.join(work, f"engine-{name}")
        p = run.start([os.path.join(rel, "searchgate"), "engine", "--listen", "127.0.0.1:0",
                       "--data-dir", data], LOAD_CORE)
        addr = run.wait_line(p, "searchgate engine listening").split()[-1]
    run.drain(p)
    return addr, p.pid


def call(port, tenant, method, path, body=None, ctype="application/json"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method)
    req.add_header("Host", tenant["host"])
    req.add_header("Authorization", run.confs.basic(tenant["user"], tenant["pass"]))
    if body is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def preload(port):
    """The indices the scenarios use, created through the edge (engine upstream only):
    `books` with documents search.lua finds, `site` for bulk.lua's actions."""
    for c in CLASSES:
        t = TENANTS[c]
        for index in ("books", "site"):
            status, body = call(port, t, "PUT", f"/{index}")
            if status != 200:
                raise RuntimeError(f"{c}: PUT /{index}: {status} {body[:200]!r}")
        lines = []
        for i in range(200):
            lines.append(json.dumps({"index": {"_index": "books", "_type": "doc", "_id": str(i)}}))
            title = f"rust book {i}" if i % 4 == 0 else f"other book {i}"
            lines.append(json.dumps({"title": title, "year": 2000 + i % 25}))
        status, body = call(port, t, "POST", "/_bulk?refresh=true",
                            ("\n".join(lines) + "\n").encode(), "application/x-ndjson")
        if status != 200 or json.loads(body).get("errors"):
            raise RuntimeError(f"{c}: preload bulk: {status} {body[:300]!r}")
    # Same answers for both classes (else the comparison would be of different work).
    hits = {c: json.loads(call(port, TENANTS[c], "GET", "/books/_search?q=title:rust")[1])
            ["hits"]["total"] for c in CLASSES}
    if len(set(hits.values())) != 1:
        raise RuntimeError(f"the classes see different data: {hits}")


def build(args):
    if args.skip_build:
        return
    log("building searchgate and the upstream (release)...")
    subprocess.run(["cargo", "build", "--release", "--bin", "searchgate",
                    "--example", "loadtest_upstream"], cwd=ROOT, check=True)


def report(results, args):
    """Prints the comparison; returns how many requests failed."""
    failed = 0
    log("")
    log("=" * 100)
    log(f"upstream {args.upstream}; medians over {args.rounds} rounds of {args.duration} s; "
        "latency in ms; CPU = the edge's CPU us per request")
    log("mt = multitenant cluster, st = single-tenant cluster; ratio mt/st = median of the "
        "per-round ratios (each mt run against the st run next to it)")
    for scenario, res in results.items():
        s = res["summary"]
        log(f"\n[{scenario}]          req/s      p50      p99    p99.9      MB/s  CPU/req")
        for c in CLASSES:
            log(run.fmt_row(c, s[c]))
        q = run.paired_ratios(res["runs"]["mt"], res["runs"]["st"])
        log(f"  ratio mt/st    {run.fmt_ratios(q)}")
        log(f"  multitenant vs single-tenant: req/s {100 * (q['rps'] - 1):+.1f}%, "
            f"CPU per request {100 * (q['cpu_us_per_req'] - 1):+.1f}%, "
            f"p99 {100 * (q['p99'] - 1):+.1f}%")
        errors = sum(s[c]["errors"] for c in CLASSES)
        failed += errors
        if errors:
            log(f"  WARNING: {errors} errors (connect/read/write, 4xx/5xx, timeouts, _bulk "
                "item errors): the comparison is not valid")
    log("")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", choices=["fast", "engine"], default="fast",
                    help="the upstream of both clusters: the fast upstream (default) or the "
                         "embedded engine (release build, preloaded)")
    ap.add_argument("--scenarios", default="plain,bulk")
    ap.add_argument("--duration", type=int, default=4, help="seconds per run (default 4)")
    ap.add_argument("--rounds", type=int, default=6, help="rounds per scenario (default 6)")
    ap.add_argument("--connections", type=int, default=64, help="wrk connections, searches")
    ap.add_argument("--bulk-connections", type=int, default=8, help="wrk connections, bulk")
    ap.add_argument("--bulk-bytes", type=int, default=1 << 20,
                    help="bulk body size (default 1MB; keep it small with --upstream engine)")
    ap.add_argument("--driver", choices=["uring", "epoll", "auto"], default="uring")
    ap.add_argument("--upstream-driver", choices=["epoll", "uring"], default="epoll")
    ap.add_argument("--access-log", choices=["off", "file"], default="off")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--normal-priority", action="store_true")
    ap.add_argument("--json", help="write every run's figures to this file")
    ap.add_argument("--perf", metavar="DIR",
                    help="profile the edge during each class's last round of each scenario "
                         "with perf (cpu-clock samples): DIR/perf-<class>-<scenario>.txt")
    run.add_perf_stat_arg(ap)
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    args = ap.parse_args()
    scenarios = [s for s in args.scenarios.split(",") if s]
    for s in scenarios:
        if s not in ("plain", "bulk"):
            ap.error(f"unknown scenario {s} (use plain, bulk)")
    for tool in ("wrk", "taskset"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is missing: run loadtest/tenancy_bench.sh, which installs it")
    if (os.cpu_count() or 1) < 2:
        sys.exit("needs 2 cores: the edge on core 0, wrk and the upstreams on core 1")

    build(args)
    if not args.normal_priority:
        run.raise_priority()
    work = tempfile.mkdtemp(prefix="sg-tenancy-bench-")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    results = {}
    try:
        upstreams, up_pids = {}, []
        for c in CLASSES:
            addr, pid = start_upstream(args, work, c)
            upstreams[c] = addr
            up_pids.append(pid)
        conf = write_config(work, args, upstreams)
        rel = run.release_dir()
        sg = run.start([os.path.join(rel, "searchgate"), "serve", "--config", conf,
                        "--driver", args.driver, "--threads", "1"], PROXY_CORE)
        line = run.wait_line(sg, "searchgate: listening")
        run.drain(sg)
        port = int(line.split("http=")[1].split()[0].rsplit(":", 1)[1])
        target = Target("searchgate", port, None, [sg.pid])
        if args.upstream == "engine":
            preload(port)
        env = dict(os.environ, SG_BODY_BYTES=str(args.bulk_bytes))
        log(f"command: {' '.join(sys.argv)}")
        log(f"work dir {work}; edge on core {PROXY_CORE} ({args.driver}), wrk + upstreams on "
            f"core {LOAD_CORE}; upstream {args.upstream}")
        for scenario in scenarios:
            for c in CLASSES:  # warm-up
                run.run_wrk(args, target, scenario, [TENANTS[c]], env, 1, up_pids)
            runs = {c: [] for c in CLASSES}
            for rnd in range(args.rounds):
                order = CLASSES if rnd % 2 == 0 else tuple(reversed(CLASSES))
                for c in order:
                    perf_out = None
                    if args.perf and rnd == args.rounds - 1:
                        os.makedirs(args.perf, exist_ok=True)
                        perf_out = os.path.join(os.path.abspath(args.perf),
                                                f"perf-{c}-{scenario}")
                    r = run.run_wrk(args, target, scenario, [TENANTS[c]], env, args.duration,
                                    up_pids, perf_out)
                    runs[c].append(r)
                    log(f"  {scenario} round {rnd + 1} {c}: {r['rps']:,.0f} req/s "
                        f"p99 {r['p99']/1e3:.2f}ms {r['cpu_us_per_req']:.2f} us CPU/req "
                        f"errors {r['errors']} other load {r['foreign_cores']:.2f} cores")
            results[scenario] = {"runs": runs, "summary": {c: run.summarize(v)
                                                           for c, v in runs.items()}}
        failed = report(results, args)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"args": vars(args), "results": results}, f, indent=1)
        if failed:
            log(f"FAILED: {failed} request(s) failed (errors above): the figures do not "
                "measure what they claim")
            sys.exit(1)
    finally:
        run.cleanup()
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        run.cleanup()
        sys.exit(130)
