#!/usr/bin/env python3
"""Load test: searchgate against Debian's nginx in front of the same fast upstream.

Starts the fast upstream (loadtest/upstream.rs), searchgate once per I/O driver (each with
`--threads 1`) and nginx (one worker), all proxies pinned to core 0 and wrk plus the
upstream pinned to core 1, then runs wrk against each in turn, interleaved (A B C A B C
...), for each scenario: small searches over plain HTTP, the same over TLS, 5MB `_bulk`
bodies, and small searches spread over many clusters. Prints req/s, p50/p99/p99.9,
MB/s and CPU per request (the proxy's CPU time over the run divided by its requests) of
each, their ratios to nginx and the issue's goals. Everything listens on 127.0.0.1, every
run is bounded in time, and every process started here is stopped at the end.

Usage: loadtest/run.sh [options]   (see --help; run.sh installs nginx and wrk if missing)
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import confs  # noqa: E402  (nginx and searchgate configuration writers)
from figures import ceiling, fmt_ratios, fmt_row, goals, paired_ratios, summarize, with_ceiling  # noqa: E402
from procs import (  # noqa: E402
    STARTED, children, cleanup, cpu_ns, drain, free_port, log, machine_busy_ns, raise_priority,
    start, wait_line, wait_port,
)

PROXY_CORE = "0"
LOAD_CORE = "1"

SCENARIOS = {
    # name: (wrk script, TLS, direct-to-upstream comparable)
    "plain": ("search.lua", False, True),
    "tls": ("search.lua", True, False),
    # spec 4.1 bodies: action lines and ~1KB site-content documents
    "bulk": ("bulk.lua", False, True),
    # 50-byte documents: the worst case for the edge's per-line `_bulk` action counting
    "bulk_tiny": ("bulk.lua", False, True),
    "mixed": ("mixed_tenants.lua", False, False),
    # small searches with two workers each (searchgate --threads 2, nginx worker_processes
    # 2) and nothing pinned by the runner: proxies, wrk and the upstream share both cores
    "plain_2w": ("search.lua", False, True),
    # issue 13: small searches through the edge recording metrics, scraped every
    # --scrape-interval s, against the same edge with `record_metrics = false`
    "metrics": ("search.lua", False, False),
}
DEFAULT_SCENARIOS = "plain,tls,bulk,bulk_tiny,mixed,plain_2w,metrics"


def layout_of(scenario):
    """How the processes of a scenario are laid out: "pinned" (one worker per proxy on core
    0, wrk and the upstream on core 1) or "free2" (two workers per proxy, no taskset)."""
    return "free2" if scenario.endswith("_2w") else "pinned"


class Target:
    """A thing wrk is pointed at: a proxy (its pids measured for CPU), the upstream, or any
    cluster URL (`url`, no pids: its CPU is not ours to measure; `shown`: the URL with the
    password masked, for reports and plots)."""

    def __init__(self, name, http, https, pids, url=None, shown=None):
        self.name, self.http, self.https, self.pids = name, http, https, pids
        self.url, self.shown = url, shown


def latency_of(counts, label=None, hgrm=True):
    """Every latency figure of a run, from its counts file and nowhere else: the percentiles
    `searchgate latency --from-wrk` computes (the same code writes the `.hgrm` and the SVG
    next to the counts when `hgrm`), in µs as the rest of the figures."""
    base = counts[: -len(".counts")]
    cmd = [searchgate_bin(), "latency", "--from-wrk", counts, "--json"]
    if label:
        cmd += ["--name", label]
    if hgrm:
        cmd += ["--hgrm", base + ".hgrm", "--plot", base + ".svg"]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, check=True, text=True).stdout
    total = json.loads(out)["total"]
    us = lambda ms: int(round(ms * 1000))  # noqa: E731
    return {"p50": us(total["p50"]), "p90": us(total["p90"]), "p99": us(total["p99"]),
            "p999": us(total["p99.9"]), "p9999": us(total["p99.99"]), "max": us(total["max_ms"])}


def plot_runs(counts_files, out):
    """One chart of several runs (`searchgate latency --from-wrk A B ... --plot`)."""
    files = [c for c in counts_files if c and os.path.exists(c)]
    if files:
        subprocess.run([searchgate_bin(), "latency", "--from-wrk", *files, "--plot", out],
                       stdout=subprocess.DEVNULL, check=True)


def searchgate_bin():
    # Where build() puts it and start_all() starts it from.
    return os.path.join(release_dir(), "searchgate")


def run_wrk(args, target, scenario, tenants, env_base, duration, up_pids=(), perf_out=None,
            label=None):
    script, tls, _ = SCENARIOS[scenario]
    tenant = tenants[0]
    env = dict(env_base)
    env.update(SG_USER=tenant["user"], SG_PASS=tenant["pass"])
    # Every run leaves its latency counts: in --out under its label, else (warm-ups, the
    # tenancy bench) in the runner's scratch directory.
    if label and args.out:
        counts = os.path.join(args.out, label + ".counts")
    else:
        counts = os.path.join(scratch_dir(), f"run-{next(RUN_NUMBERS)}.counts")
    env["SG_LATENCY_FILE"] = counts
    env["SG_LABEL"] = label or ""
    env["SG_TARGET"] = target.shown or target.name
    if target.url:
        # Any cluster URL (--target-url): credentials from its userinfo, Host from its host.
        url = target.url
    elif tls:
        # SNI comes from the URL, so the Host is `localhost`: routed by username.
        url = f"https://localhost:{target.https}/"
    else:
        url = f"http://127.0.0.1:{target.http}/"
        env["SG_HOST"] = tenant["host"]
    if scenario == "bulk_tiny":
        env["SG_BULK_DOC"] = "tiny"
    bulk = scenario.startswith("bulk")
    conns = args.bulk_connections if bulk else args.connections
    pin = ["taskset", "-c", LOAD_CORE] if layout_of(scenario) == "pinned" else []
    threads = "-t1" if layout_of(scenario) == "pinned" else "-t2"
    cmd = pin + [
        "wrk", threads, f"-c{conns}", f"-d{duration}s",
        "--timeout", "10s", "-s", os.path.join(HERE, script), url,
    ]
    watched = sorted(set(target.pids) | set(up_pids))
    cpu0 = cpu_ns(target.pids)
    all0 = cpu_ns(watched)
    busy0 = machine_busy_ns()
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    STARTED.append(p)
    stat = None
    if args.perf_stat:
        # System-wide counts (the proxy, the upstream, wrk and the kernel's work for all of
        # them) over the run, per request: the same load through each proxy, so differences
        # are the proxy's (e.g. loopback packets or system calls per request).
        stat = subprocess.Popen(
            ["perf", "stat", "-a", "-x", ",", "-e", args.perf_stat, "--",
             "sleep", str(max(1, duration - 1))],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        STARTED.append(stat)
    perf = None
    if perf_out:
        perf = subprocess.Popen(
            ["perf", "record", "-e", "cpu-clock", "-F", "2999", "-o", perf_out + ".data"]
            + (["--call-graph", "dwarf,16384"] if getattr(args, "perf_callgraph", False) else []) + [
             "-p", ",".join(str(x) for x in target.pids), "--", "sleep", str(max(1, duration - 1))],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        STARTED.append(perf)
    try:
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    finally:
        STARTED.remove(p)
    wall = time.time() - t0
    cpu = cpu_ns(target.pids) - cpu0
    ours = cpu_ns(watched) - all0 + int((usage.ru_utime + usage.ru_stime) * 1e9)
    busy = machine_busy_ns() - busy0
    stats = {}
    if stat:
        for l in stat.communicate()[1].splitlines():
            f = l.split(",")
            if len(f) > 2 and f[0].strip().isdigit():
                stats[f[2]] = int(f[0])
        STARTED.remove(stat)
    if perf:
        perf.wait()
        STARTED.remove(perf)
        with open(perf_out + ".txt", "w") as f:
            subprocess.run(["perf", "report", "-i", perf_out + ".data", "--stdio", "--no-children",
                            "--sort", "dso,symbol", "--percent-limit", "0.3"],
                           stdout=f, stderr=subprocess.DEVNULL)
    line = next((l for l in out.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"wrk gave no result for {target.name}/{scenario}:\n{out}")
    r = {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}
    secs = r["duration_us"] / 1e6
    r["rps"] = r["requests"] / secs
    if bulk:
        r["mbps"] = r["requests"] * args.bulk_bytes / secs / 1e6
    else:
        r["mbps"] = r["bytes_read"] / secs / 1e6
    if target.pids:
        # Only what was measured: a cluster URL's processes are not ours to see.
        r["cpu_us_per_req"] = cpu / 1e3 / max(1, r["requests"])
        r["proxy_cpu_share"] = cpu / 1e9 / wall
        r["busy_cores"] = busy / 1e9 / wall
        # CPU of the two cores not used by the proxy, the upstream or wrk: other work on
        # the machine that disturbed this run.
        r["foreign_cores"] = max(0.0, (busy - ours) / 1e9 / wall)
    # Scaled to the whole run from the counting window (duration - 1 s, see above).
    window = max(1, duration - 1) / secs
    for ev, n in stats.items():
        r["per_req:" + ev] = n / window / max(1, r["requests"])
    r["errors"] = sum(r[k] for k in ERROR_KINDS)
    r.update(latency_of(counts, label, hgrm=bool(label and args.out)))
    if label and args.out:
        r["histogram"] = label
    r["counts"] = counts
    return r


# What counts as a failed request: wrk's connect/read/write errors, answers with a status
# of 400 or more, timeouts, and 2xx `_bulk` answers with `"errors":true` (bulk.lua).
ERROR_KINDS = ("connect_errors", "read_errors", "write_errors", "status_errors", "timeouts",
               "item_errors")


def describe_errors(r):
    """`12 (status 4xx/5xx 10, _bulk item errors 2)`: the kinds with failures."""
    names = {"connect_errors": "connect", "read_errors": "read", "write_errors": "write",
             "status_errors": "status 4xx/5xx", "timeouts": "timeouts",
             "item_errors": "_bulk answers with item errors"}
    kinds = [f"{names[k]} {r[k]}" for k in ERROR_KINDS if r.get(k)]
    return f"{r['errors']}" + (f" ({', '.join(kinds)})" if kinds else "")


RUN_NUMBERS = iter(range(1, 1 << 30))
SCRATCH = []


def scratch_dir():
    """A directory for the counts of unlabelled runs, removed when the runner exits."""
    if not SCRATCH:
        import atexit

        SCRATCH.append(tempfile.mkdtemp(prefix="sg-loadtest-counts-"))
        atexit.register(shutil.rmtree, SCRATCH[0], True)
    return SCRATCH[0]


def release_dir():
    """Where cargo puts release binaries: $CARGO_TARGET_DIR/release, else target/release."""
    return os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"), "release")


def build(args, upstream=True):
    """Builds searchgate (and with `upstream` the fast upstream) in release mode, unless
    --skip-build."""
    if args.skip_build:
        return
    what = ["--bin", "searchgate"] + (["--example", "loadtest_upstream"] if upstream else [])
    log(f"building searchgate{' and the upstream' if upstream else ''} (release)...")
    subprocess.run(["cargo", "build", "--release", *what], cwd=ROOT, check=True)


def start_all(args, work, tenants, layout="pinned"):
    """Starts the upstream, nginx and one searchgate per driver, laid out as `layout` says
    (see layout_of); returns the targets."""
    rel = release_dir()
    pinned = layout == "pinned"
    workers_each = 1 if pinned else 2
    proxy_core, load_core = (PROXY_CORE, LOAD_CORE) if pinned else (None, None)
    up = start([os.path.join(rel, "examples", "loadtest_upstream"), "--driver", args.upstream_driver], load_core)
    up_addr = wait_line(up, "upstream: listening").split()[-1]
    drain(up)
    up_port = int(up_addr.rsplit(":", 1)[1])
    targets = {"direct": Target("direct", up_port, None, [up.pid])}
    cert, key = confs.make_cert(work)

    ngx_http, ngx_https = free_port(), free_port()
    ngx_conf = confs.write_nginx(work, args, tenants, up_port, ngx_http, ngx_https, cert, key,
                                 workers=workers_each)
    ngx = start(["nginx", "-c", ngx_conf, "-p", work], proxy_core)
    wait_port(ngx_http)
    wait_port(ngx_https)
    drain(ngx)
    deadline = time.time() + 10
    workers = children(ngx.pid)
    while len(workers) < workers_each and time.time() < deadline:
        time.sleep(0.05)
        workers = children(ngx.pid)
    if len(workers) != workers_each:
        raise RuntimeError(f"nginx should have {workers_each} worker(s), found {workers}")
    targets["nginx"] = Target("nginx", ngx_http, ngx_https, workers)

    metrics = "metrics" in args.scenario_list and pinned
    for driver in args.drivers:
        targets[f"sg-{driver}"] = start_searchgate(args, work, tenants, up_port, cert, key, driver,
                                                   proxy_core, workers_each, metrics=metrics)
        if metrics:
            name = f"sg-{driver}-nometrics"
            targets[name] = start_searchgate(args, work, tenants, up_port, cert, key, driver,
                                             proxy_core, workers_each, record=False)
    return targets


def start_searchgate(args, work, tenants, up_port, cert, key, driver, core, workers,
                     record=True, metrics=False):
    """Starts one searchgate (`record`: metrics recorded; `metrics`: with a metrics
    listener, whose URL the target keeps for the scraper) and returns its target."""
    name = f"sg-{driver}" + ("" if record else "-nometrics")
    conf = confs.write_searchgate(work, name, args, tenants, up_port, cert, key,
                                  record=record, metrics=metrics)
    sg = start(
        [os.path.join(release_dir(), "searchgate"), "serve", "--config", conf, "--driver", driver,
         "--threads", str(workers)],
        core,
    )
    line = wait_line(sg, "searchgate: listening")
    drain(sg)
    addrs = dict(kv.split("=", 1) for kv in line.split()[2:])
    http = int(addrs["http"].rsplit(":", 1)[1])
    https = int(addrs["https"].rsplit(":", 1)[1])
    target = Target(name, http, https, [sg.pid])
    target.metrics_url = next((ln.split()[-1] for ln in sg.seen_lines
                               if ln.startswith("searchgate: metrics ")), None)
    if metrics and not target.metrics_url:
        raise RuntimeError(f"{name}: no metrics listener line in {sg.seen_lines}")
    return target


class Scraper:
    """Scrapes a target's /metrics every `interval` s in a thread while a run lasts, as a
    Prometheus server would (its CPU is the runner's; the edge's side is the edge's)."""

    def __init__(self, url, interval):
        import threading

        self.url, self.interval, self.scrapes, self.bytes = url, interval, 0, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        import urllib.request

        while not self.stop.is_set():
            with urllib.request.urlopen(self.url, timeout=5) as r:
                self.bytes += len(r.read())
            self.scrapes += 1
            self.stop.wait(self.interval)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        self.thread.join()


def scenario_order(scenario, args):
    """The targets of a scenario, in the order each round runs them."""
    if scenario == "metrics":
        return [n for d in args.drivers for n in (f"sg-{d}-nometrics", f"sg-{d}")]
    _, _, direct_ok = SCENARIOS[scenario]
    return (["direct"] if direct_ok else []) + ["nginx"] + [f"sg-{d}" for d in args.drivers]


def run_round(args, targets, scenario, tenants, env, rnd, name):
    """One measured run of `name` in round `rnd` (profiled on the last round with --perf;
    scraped while it lasts in the `metrics` scenario)."""
    perf_out = None
    if args.perf and name != "direct" and rnd == args.rounds - 1:
        os.makedirs(args.perf, exist_ok=True)
        perf_out = os.path.join(os.path.abspath(args.perf), f"perf-{name}-{scenario}")
    target = targets[name]
    scrape = getattr(target, "metrics_url", None) if scenario == "metrics" else None
    if scrape:
        with Scraper(scrape, args.scrape_interval) as sc:
            r = run_wrk(args, target, scenario, tenants, env, args.duration,
                        targets["direct"].pids, perf_out, label=f"{scenario}-{name}-round{rnd + 1}")
        r["scrapes"], r["scrape_bytes"] = sc.scrapes, sc.bytes
    else:
        r = run_wrk(args, target, scenario, tenants, env, args.duration,
                    targets["direct"].pids, perf_out, label=f"{scenario}-{name}-round{rnd + 1}")
    log(f"  {scenario} round {rnd + 1} {name}: {r['rps']:,.0f} req/s "
        f"p99 {r['p99']/1e3:.3f}ms {r['mbps']:.1f} MB/s "
        f"{r['cpu_us_per_req']:.2f} us CPU/req errors {describe_errors(r)} "
        f"other load {r['foreign_cores']:.2f} cores"
        + (f" scrapes {r['scrapes']} ({r['scrape_bytes']:,} bytes)" if "scrapes" in r else ""))
    return r


HOSTS = "the host's"


def add_perf_stat_arg(ap):
    """`--perf-stat`, which `run_wrk` reads: shared with tenancy_bench.py."""
    ap.add_argument("--perf-stat", metavar="EVENTS",
                    help="count these perf events system-wide during every run and report "
                         "them per request (e.g. net:net_dev_xmit,raw_syscalls:sys_enter)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=4, help="seconds per run (default 4)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per scenario (default 5)")
    ap.add_argument("--connections", type=int, default=64, help="wrk connections, small requests")
    ap.add_argument("--bulk-connections", type=int, default=8, help="wrk connections, bulk")
    ap.add_argument("--bulk-bytes", type=int, default=5 * 1024 * 1024, help="bulk body size")
    ap.add_argument("--scenarios", default=DEFAULT_SCENARIOS,
                    help=f"comma list of {', '.join(SCENARIOS)} (default: all)")
    ap.add_argument("--drivers", default="uring,epoll")
    ap.add_argument("--tenants", type=int, default=1000, help="clusters configured (mixed uses all)")
    ap.add_argument("--access-log", choices=["off", "file"], default="off",
                    help="access log of both proxies: off, or a file each (default off)")
    ap.add_argument("--nginx-auth", choices=["basic", "map"], default="map",
                    help="nginx's credential check: a map of Host+Authorization in memory "
                         "(default: the strongest nginx), or auth_basic with an htpasswd "
                         "file ({PLAIN}) that nginx reads on every request")
    ap.add_argument("--nginx-body-buffer", default="256k",
                    help="nginx's client_body_buffer_size; default 256k, the size searchgate "
                         "reads large bodies in (edge/core.rs BODY_BUF)")
    ap.add_argument("--scrape-interval", type=float, default=1.0,
                    help="metrics scenario: seconds between two scrapes of /metrics (default 1, "
                         "15 times Prometheus' default rate)")
    ap.add_argument("--pin-workers", choices=["on", "off"], default="on",
                    help="searchgate's [edge] pin_workers: each worker pinned to its core (on, "
                         "the default), or placed by the scheduler (off); matters for plain_2w, "
                         "where nothing else is pinned")
    ap.add_argument("--upstream-congestion", default="cubic", metavar="NAME",
                    help="searchgate's [edge] upstream_congestion (default cubic, its default; "
                         "'' keeps the host's)")
    ap.add_argument("--host-congestion", metavar="NAME", default="cubic",
                    help="set the host's TCP congestion control (net.ipv4.tcp_congestion_control,"
                         " every socket of the run: nginx's, wrk's, the upstream's) for the run "
                         "and restore it at the end (default cubic: a host at BBR paces nginx's "
                         "upstream connections and not the edge's, a handicap for nginx); "
                         "'' leaves the host's as it is")
    ap.add_argument("--upstream-driver", choices=["epoll", "uring"], default="epoll")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--normal-priority", action="store_true",
                    help="do not raise the runs' priority over other work (nice -20, autogroup)")
    ap.add_argument("--json", help="write every run's figures to this file")
    add_perf_stat_arg(ap)
    ap.add_argument("--perf", metavar="DIR",
                    help="profile each proxy's last run of each scenario with perf (cpu-clock "
                         "samples) and write DIR/perf-<proxy>-<scenario>.txt")
    ap.add_argument("--perf-callgraph", action="store_true",
                    help="with --perf: record call graphs too (DWARF unwinding), for "
                         "`perf report -i DIR/perf-<proxy>-<scenario>.data -G`")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (configs, logs)")
    ap.add_argument("--out", help="directory for every run's figures (figures.json), latency "
                                  "distribution (.hgrm) and plot (.svg); default "
                                  "loadtest/results/<UTC time>")
    ap.add_argument("--target-url", metavar="URL",
                    help="run the scenarios against this cluster URL only "
                         "(https://user:pass@host:port); no nginx, edge or upstream is started")
    ap.add_argument("--scenario", help="with --target-url: search or bulk (default search)")
    ap.add_argument("--index", default="books", help="with --target-url: the index searched "
                    "(bulk writes to `site`); it must exist (auto-creation is off, spec 1.5)")
    args = ap.parse_args()
    if not args.out:
        args.out = os.path.join(HERE, "results", time.strftime("%Y%m%d-%H%M%S", time.gmtime()))
    if args.target_url:
        return run_target(args)
    os.makedirs(args.out, exist_ok=True)
    args.drivers = [d for d in args.drivers.split(",") if d]
    scenarios = [s for s in args.scenarios.split(",") if s]
    args.scenario_list = scenarios
    for s in scenarios:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario {s} (use {', '.join(SCENARIOS)})")
    for tool in ("nginx", "wrk", "taskset", "openssl"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is missing: run loadtest/run.sh, which installs it")
    if (os.cpu_count() or 1) < 2:
        sys.exit("needs 2 cores: proxies on core 0, wrk and the upstream on core 1")

    build(args)
    if not args.normal_priority:
        raise_priority()
    host_cc = "/proc/sys/net/ipv4/tcp_congestion_control"
    with open(host_cc) as f:
        args.host_congestion_before = f.read().strip()
    if args.host_congestion == args.host_congestion_before:
        args.host_congestion = ""  # nothing to set, nothing to restore
    if args.host_congestion:
        try:
            with open(host_cc, "w") as f:
                f.write(args.host_congestion)
        except OSError as e:
            sys.exit(f"cannot set the host's TCP congestion control to {args.host_congestion} "
                     f"({e}); run as root, or pass --host-congestion '' to measure with the "
                     f"host's {args.host_congestion_before}")
    work = tempfile.mkdtemp(prefix="sg-loadtest-")
    os.chmod(work, 0o755)  # nginx's workers run as another user and read the htpasswd files
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    results = {}
    try:
        tenants = confs.make_tenants(args.tenants)
        env = dict(os.environ, SG_TENANTS_FILE=confs.write_tenants_file(work, tenants),
                   SG_BODY_BYTES=str(args.bulk_bytes))
        log(f"command: {' '.join(sys.argv)}")
        log(f"work dir {work}; {args.tenants} clusters; access log {args.access_log}; "
            f"nginx auth {args.nginx_auth}; host congestion control "
            f"{args.host_congestion or args.host_congestion_before} (was "
            f"{args.host_congestion_before}); searchgate upstream "
            f"connections {args.upstream_congestion or HOSTS}")
        layout = None
        for scenario in sorted(scenarios, key=lambda s: layout_of(s) != "pinned"):
            if layout_of(scenario) != layout:
                cleanup()
                layout = layout_of(scenario)
                targets = start_all(args, work, tenants, layout)
                log(f"layout {layout}: " + (
                    f"one worker per proxy on core {PROXY_CORE}, wrk + upstream on core {LOAD_CORE}"
                    if layout == "pinned" else
                    "two workers per proxy (searchgate pins its own, nginx affinity auto), "
                    "wrk -t2 and the upstream unpinned"))
            order = scenario_order(scenario, args)
            for name in order:  # warm-up: pools filled, caches hot
                run_wrk(args, targets[name], scenario, tenants, env, 1)
            runs = {name: [] for name in order}
            for rnd in range(args.rounds):
                # A B C, then C B A: no target always runs first (or last) in a round
                for name in (order if rnd % 2 == 0 else order[::-1]):
                    runs[name].append(run_round(args, targets, scenario, tenants, env, rnd, name))
            results[scenario] = {"runs": runs, "summary": {n: summarize(v) for n, v in runs.items()}}
            # Every target's last run of the scenario on one chart.
            plot_runs([runs[n][-1]["counts"] for n in order],
                      os.path.join(args.out, f"{scenario}.svg"))
        failed = report(results, args)
        write_figures(args, results)
        if failed:
            log(f"FAILED: {failed} request(s) failed (errors above): the figures do not "
                "measure what they claim")
            sys.exit(1)
    finally:
        cleanup()
        if args.host_congestion:
            with open(host_cc, "w") as f:
                f.write(args.host_congestion_before)
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


# Options a run against --target-url reads; the others (nginx, the edge's settings, the
# host's congestion control) are not part of such a run and are not recorded as if they were.
TARGET_ARGS = ("duration", "rounds", "connections", "bulk_connections", "bulk_bytes",
               "scenario", "index", "target_url", "out")


def write_figures(args, results):
    recorded = vars(args)
    if args.target_url:
        recorded = {k: v for k, v in recorded.items() if k in TARGET_ARGS}
    figures = {"args": recorded, "results": results}
    for path in filter(None, [args.json, os.path.join(args.out, "figures.json")]):
        with open(path, "w") as f:
            json.dump(figures, f, indent=1)
    log(f"figures, latency distributions (.hgrm) and plots (.svg) in {args.out}")


TARGET_SCENARIOS = {"search": "plain", "bulk": "bulk"}
BULK_INDEX = "site"


def run_target(args):
    """Runs `--scenario` against `--target-url` for `--rounds` runs of `--duration` s each,
    after checking the target (credentials, index); every run leaves its figures,
    percentile distribution and plot in `--out`, and all runs share one chart. Exits 1 when
    a request failed."""
    from urllib.parse import urlsplit, unquote

    name = args.scenario or "search"
    scenario = TARGET_SCENARIOS.get(name)
    if scenario is None:
        sys.exit(f"--scenario: use one of {', '.join(TARGET_SCENARIOS)}")
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: run loadtest/run.sh, which installs it")
    u = urlsplit(args.target_url)
    if u.scheme not in ("http", "https") or not u.hostname or u.username is None:
        sys.exit("--target-url: expected https://user:pass@host[:port]")
    port = u.port or (443 if u.scheme == "https" else 80)
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
    shown = f"{u.scheme}://{u.username}:****@{host}:{port}"
    base = f"{u.scheme}://{host}:{port}"
    user, password = unquote(u.username), unquote(u.password or "")
    index = BULK_INDEX if scenario == "bulk" else args.index
    check_target(base, shown, user, password, index, scenario)
    os.makedirs(args.out, exist_ok=True)
    build(args, upstream=False)  # `searchgate latency` computes and draws the distributions
    target = Target("target", None, None, [], url=base + "/", shown=shown)
    tenants = [{"user": user, "pass": password, "host": host}]
    env = dict(os.environ, SG_BODY_BYTES=str(args.bulk_bytes), SG_INDEX=args.index)
    log(f"command: {' '.join(a if a != args.target_url else shown for a in sys.argv)}")
    log(f"target {shown}, scenario {name} (index {index}), {args.rounds} runs of "
        f"{args.duration} s")
    runs = []
    for rnd in range(args.rounds):
        r = run_wrk(args, target, scenario, tenants, env, args.duration,
                    label=f"{name}-target-round{rnd + 1}")
        runs.append(r)
        log(f"  round {rnd + 1}: {r['rps']:,.0f} req/s p50 {r['p50']/1e3:.3f}ms "
            f"p99 {r['p99']/1e3:.3f}ms p99.9 {r['p999']/1e3:.3f}ms "
            f"errors {describe_errors(r)}")
    s = summarize(runs)
    log(f"median of {len(runs)} runs: {s['rps']:,.0f} req/s p50 {s['p50']/1e3:.3f}ms "
        f"p99 {s['p99']/1e3:.3f}ms p99.9 {s['p999']/1e3:.3f}ms; "
        f"{s['errors']} of {s['requests']} requests failed")
    plot_runs([r["counts"] for r in runs], os.path.join(args.out, f"{name}-target.svg"))
    args.target_url = shown  # never write the password into figures.json
    write_figures(args, {name: {"runs": {"target": runs}, "summary": {"target": s}}})
    if s["errors"]:
        log(f"FAILED: {s['errors']} of {s['requests']} requests failed: "
            + "; ".join(f"round {i + 1}: {describe_errors(r)}" for i, r in enumerate(runs)
                        if r["errors"]))
        sys.exit(1)


def refuse(message):
    """Stops before measuring: the message says what to do; exit status 2 (a run whose
    requests failed exits 1)."""
    print(f"loadtest: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def check_target(base, shown, user, password, index, scenario):
    """Before measuring: the cluster answers, takes the credentials, and has the index the
    scenario needs. Refuses (exit 2) with what to do otherwise. TLS is not verified, as wrk
    does not verify it either (the service's own CA is usually not in the system's)."""
    import base64
    import ssl
    import urllib.error
    import urllib.request

    auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    ctx = ssl._create_unverified_context()

    def get(path):
        req = urllib.request.Request(base + path, headers={"Authorization": auth})
        try:
            with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
        except (urllib.error.URLError, OSError) as e:
            refuse(f"--target-url: cannot reach {shown}: {getattr(e, 'reason', e)}")

    def reason(body):
        try:
            return json.loads(body)["error"]["reason"]
        except (ValueError, KeyError, TypeError):
            return body[:200].decode("utf-8", "replace")

    status, body = get("/")
    if status == 401:
        refuse(f"--target-url: {shown} refused the credentials (401: {reason(body)}); use "
                 "the URL the service printed for the cluster, with its username and password")
    if status == 404:
        refuse(f"--target-url: no cluster answers at {shown} (404: {reason(body)}); check "
                 "the host name, or whether the cluster was deleted")
    if status >= 300:
        refuse(f"--target-url: GET / answered {status} ({reason(body)}); the load test "
                 "needs a cluster that answers")
    status, body = get(f"/{index}")
    if status == 404:
        what = "bulk writes into it" if scenario == "bulk" else "the searches read it"
        flag = "" if scenario == "bulk" else " (or name another with --index)"
        ca = ("; a certificate of a private CA, such as a local searchgate's, needs curl's "
              "--cacert (data/ca.pem)") if base.startswith("https:") else ""
        refuse(f"--target-url: the cluster has no index `{index}`, and {what}; create it "
                 f"first{flag}: curl -X PUT '{shown.replace(':****@', ':PASSWORD@')}/{index}' "
                 f"(automatic index creation is off{ca})")
    if status >= 300:
        refuse(f"--target-url: GET /{index} answered {status} ({reason(body)})")


def report(results, args):
    log("")
    log("=" * 100)
    log("medians over rounds; latency in ms; MB/s = response bytes (bulk: request bodies); "
        "CPU = proxy CPU us per request; x = searchgate / nginx (metrics: / the same edge "
        "recording nothing); goals judged on the median of per-round ratios")
    failed = 0
    for scenario, res in results.items():
        s = res["summary"]
        log(f"\n[{scenario}]   {'':<3}      req/s      p50      p99    p99.9      MB/s  CPU/req")
        bad = [n for n, v in s.items() if v["errors"]]
        failed += sum(v["errors"] for v in s.values())
        if bad:
            log(f"  WARNING: {', '.join(bad)} had errors (non-2xx, _bulk item errors, "
                "timeouts, resets): the comparison is not valid; see the logs (--keep)")
        for d in args.drivers:
            name = f"sg-{d}"
            base = f"sg-{d}-nometrics" if scenario == "metrics" else "nginx"
            roof = None
            # On a host at BBR, wrk's and the upstream's sockets are paced in `direct` while
            # the edge sets cubic on its upstream sockets: `direct` is then no ceiling.
            paced = (args.host_congestion or args.host_congestion_before) == "bbr"
            if scenario != "metrics" and not paced:
                roof = ceiling(res["runs"].get("direct"), res["runs"]["nginx"])
            if scenario != "metrics" and d == args.drivers[0]:
                if "direct" in s:
                    log(fmt_row("direct", s["direct"]))
                if roof:
                    res["summary"]["direct"]["paired_ratios"] = roof
                    unit = ("mbps", "MB/s") if scenario.startswith("bulk") else ("rps", "req/s")
                    why = ("wrk and the upstream share one core" if layout_of(scenario) == "pinned"
                           else "a proxy only adds work to the same two cores")
                    log(f"  {'':<14} ceiling, median of per-round ratios direct / nginx: "
                        f"x{roof[unit[0]]:.2f} {unit[1]} (no proxy can pass it here: {why})")
                log(fmt_row("nginx", s["nginx"]))
            if scenario == "metrics":
                log(fmt_row(base, s[base]))
            log(fmt_row(name, s[name], s[base]))
            q = paired_ratios(res["runs"][name], res["runs"][base])
            res["summary"][name]["paired_ratios"] = q
            log(f"  {'':<14} median of per-round ratios to {base}: {fmt_ratios(q)}")
            for text, met, _ in with_ceiling(goals(scenario, q, s[name]["errors"]), roof):
                log(f"      {'PASS' if met else 'FAIL'}  {name}: {text}")
    log("")
    return failed


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        cleanup()
        sys.exit(130)
