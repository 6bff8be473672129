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
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import confs  # noqa: E402  (nginx and searchgate configuration writers)

PROXY_CORE = "0"
LOAD_CORE = "1"
CLK_TCK = os.sysconf("SC_CLK_TCK")

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
}
DEFAULT_SCENARIOS = "plain,tls,bulk,bulk_tiny,mixed,plain_2w"


def layout_of(scenario):
    """How the processes of a scenario are laid out: "pinned" (one worker per proxy on core
    0, wrk and the upstream on core 1) or "free2" (two workers per proxy, no taskset)."""
    return "free2" if scenario.endswith("_2w") else "pinned"

STARTED = []  # every process started here, stopped in cleanup()


def log(msg):
    print(msg, flush=True)


def cleanup():
    for p in reversed(STARTED):
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.time() + 10
    for p in reversed(STARTED):
        try:
            p.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    STARTED.clear()


def start(cmd, core, env=None, cwd=None):
    """Starts `cmd` pinned to `core` (None: not pinned), its output piped; registers it for
    cleanup."""
    p = subprocess.Popen(
        (["taskset", "-c", core] if core is not None else []) + cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=cwd,
    )
    STARTED.append(p)
    return p


def wait_line(p, prefix, timeout=30):
    """Reads `p`'s output until a line starting with `prefix`; returns that line."""
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip())
        if line.startswith(prefix):
            return line.strip()
    raise RuntimeError(f"{p.args}: no `{prefix}` line; output:\n" + "\n".join(seen))


def drain(p):
    """Keeps reading `p`'s output in the background so it never blocks on a full pipe."""
    import threading

    def run():
        for _ in p.stdout:
            pass

    threading.Thread(target=run, daemon=True).start()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def cpu_ns(pids):
    """CPU time (user+system) of every thread of `pids`, in ns (schedstat when present)."""
    total = 0
    for pid in pids:
        tasks = f"/proc/{pid}/task"
        try:
            tids = os.listdir(tasks)
        except FileNotFoundError:
            continue
        for tid in tids:
            try:
                with open(f"{tasks}/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
                continue
            except (FileNotFoundError, IndexError, ValueError):
                pass
            try:
                with open(f"{tasks}/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) * 10**9 // CLK_TCK
            except FileNotFoundError:
                pass
    return total


def machine_busy_ns():
    """Busy time of cores 0 and 1 from /proc/stat, in ns."""
    busy = 0
    with open("/proc/stat") as f:
        for line in f:
            parts = line.split()
            if parts[0] in ("cpu0", "cpu1"):
                v = [int(x) for x in parts[1:]]
                idle = v[3] + (v[4] if len(v) > 4 else 0)
                busy += sum(v[:8]) - idle
    return busy * 10**9 // CLK_TCK


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (FileNotFoundError, ProcessLookupError):
                pass
    return out


class Target:
    """A thing wrk is pointed at: a proxy (its pids measured for CPU), the upstream, or any
    cluster URL (`url`, no pids: its CPU is not ours to measure)."""

    def __init__(self, name, http, https, pids, url=None):
        self.name, self.http, self.https, self.pids = name, http, https, pids
        self.url = url


def histogram_files(args, counts, label):
    """Turns a run's wrk latency counts into HdrHistogram's percentile distribution
    (`.hgrm`) and an SVG plot next to them, with `searchgate latency`."""
    base = counts[: -len(".counts")]
    subprocess.run(
        [searchgate_bin(), "latency", "--from-wrk", counts, "--name", label,
         "--hgrm", base + ".hgrm", "--plot", base + ".svg"],
        stdout=subprocess.DEVNULL, check=True,
    )


def searchgate_bin():
    # Where build() puts it and start_all() starts it from.
    return os.path.join(release_dir(), "searchgate")


def run_wrk(args, target, scenario, tenants, env_base, duration, up_pids=(), perf_out=None,
            label=None):
    script, tls, _ = SCENARIOS[scenario]
    tenant = tenants[0]
    env = dict(env_base)
    env.update(SG_USER=tenant["user"], SG_PASS=tenant["pass"])
    counts = None
    if label and args.out:
        counts = os.path.join(args.out, label + ".counts")
        env["SG_LATENCY_FILE"] = counts
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
    perf = None
    if perf_out:
        perf = subprocess.Popen(
            ["perf", "record", "-e", "cpu-clock", "-F", "2999", "-o", perf_out + ".data",
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
    r["cpu_us_per_req"] = cpu / 1e3 / max(1, r["requests"])
    r["proxy_cpu_share"] = cpu / 1e9 / wall
    r["busy_cores"] = busy / 1e9 / wall
    # CPU of the two cores not used by the proxy, the upstream or wrk: other work on the
    # machine that disturbed this run.
    r["foreign_cores"] = max(0.0, (busy - ours) / 1e9 / wall)
    r["errors"] = sum(r[k] for k in ("connect_errors", "read_errors", "write_errors",
                                     "status_errors", "timeouts"))
    if counts:
        histogram_files(args, counts, label)
        r["histogram"] = label
    return r


def summarize(runs):
    med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
    reqs = sum(r["requests"] for r in runs)
    return {
        "rounds": len(runs),
        "rps": med("rps"),
        "mbps": med("mbps"),
        "p50": med("p50"),
        "p99": med("p99"),
        "p999": med("p999"),
        "cpu_us_per_req": statistics.median(r["cpu_us_per_req"] for r in runs),
        "errors": sum(r["errors"] for r in runs),
        "requests": reqs,
        "busy_cores": med("busy_cores"),
        "foreign_cores": med("foreign_cores"),
        "rps_all": [round(r["rps"]) for r in runs],
    }


def fmt_row(name, s, base=None):
    row = (f"  {name:<14} {s['rps']:>10,.0f} {s['p50']/1e3:>8.2f} {s['p99']/1e3:>8.2f} "
           f"{s['p999']/1e3:>8.2f} {s['mbps']:>9.1f} {s['cpu_us_per_req']:>8.2f}")
    if base:
        row += (f"   x{s['rps']/base['rps']:.2f} rps  x{s['cpu_us_per_req']/base['cpu_us_per_req']:.2f} cpu"
                f"  x{s['p99']/max(1, base['p99']):.2f} p99  x{s['p999']/max(1, base['p999']):.2f} p99.9"
                f"  x{s['mbps']/max(1e-9, base['mbps']):.2f} MB/s")
    if s["errors"]:
        row += f"   ERRORS={s['errors']}"
    row += f"   foreign={s['foreign_cores']:.2f} cores  runs={s['rps_all']}"
    return row


def paired_ratios(runs, base_runs):
    """Median over rounds of each round's ratio to the base's run of the same round: the
    runs of a round are next to each other in time, so slow drifts of the machine cancel."""
    keys = ("rps", "cpu_us_per_req", "p99", "p999", "mbps")
    return {k: statistics.median(r[k] / max(1e-9, b[k]) for r, b in zip(runs, base_runs))
            for k in keys}


def fmt_ratios(q):
    return (f"x{q['rps']:.2f} rps  x{q['cpu_us_per_req']:.2f} cpu  x{q['p99']:.2f} p99  "
            f"x{q['p999']:.2f} p99.9  x{q['mbps']:.2f} MB/s")


def goals(scenario, q, errors):
    """The goals of issue 15 for one scenario, judged on the paired ratios `q` (meant
    against nginx with `--nginx-auth map`, the default)."""
    out = []
    if scenario in ("plain", "mixed"):
        out.append(("req/s >= 1.15x nginx", q["rps"] >= 1.15))
        out.append(("CPU/request <= 0.80x nginx", q["cpu_us_per_req"] <= 0.80))
        out.append(("p99 <= 0.80x nginx", q["p99"] <= 0.80))
        out.append(("p99.9 <= 0.80x nginx", q["p999"] <= 0.80))
    elif scenario == "tls":
        out.append(("req/s >= 1.20x nginx", q["rps"] >= 1.20))
    elif scenario == "bulk":
        out.append(("MB/s >= 1.10x nginx", q["mbps"] >= 1.10))
    elif scenario == "bulk_tiny":
        out.append(("MB/s >= 1.0x nginx", q["mbps"] >= 1.0))
    elif scenario == "plain_2w":
        out.append(("req/s >= 1.15x nginx (two workers each)", q["rps"] >= 1.15))
    out.append(("no errors", errors == 0))
    return out


def raise_priority():
    """Gives this runner and everything it starts precedence over other work on the machine
    (nice -20, and the same for its autogroup, since with autogroups the nice value of a
    process only counts within its session). Root only; bounded by the runs' length."""
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
        if os.path.exists("/proc/self/autogroup"):
            with open("/proc/self/autogroup", "w") as f:
                f.write("-20")
        return True
    except OSError as e:
        log(f"note: cannot raise the priority ({e}); other work on the machine will disturb the runs")
        return False


def release_dir():
    """Where cargo puts release binaries: $CARGO_TARGET_DIR/release, else target/release."""
    return os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"), "release")


def build(args):
    if args.skip_build:
        return
    log("building searchgate and the upstream (release)...")
    subprocess.run(
        ["cargo", "build", "--release", "--bin", "searchgate", "--example", "loadtest_upstream"],
        cwd=ROOT, check=True,
    )


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

    for driver in args.drivers:
        conf = confs.write_searchgate(work, driver, args, tenants, up_port, cert, key)
        sg = start(
            [os.path.join(rel, "searchgate"), "serve", "--config", conf, "--driver", driver,
             "--threads", str(workers_each)],
            proxy_core,
        )
        line = wait_line(sg, "searchgate: listening")
        drain(sg)
        addrs = dict(kv.split("=", 1) for kv in line.split()[2:])
        http = int(addrs["http"].rsplit(":", 1)[1])
        https = int(addrs["https"].rsplit(":", 1)[1])
        targets[f"sg-{driver}"] = Target(f"sg-{driver}", http, https, [sg.pid])
    return targets


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
    ap.add_argument("--upstream-driver", choices=["epoll", "uring"], default="epoll")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--normal-priority", action="store_true",
                    help="do not raise the runs' priority over other work (nice -20, autogroup)")
    ap.add_argument("--json", help="write every run's figures to this file")
    ap.add_argument("--perf", metavar="DIR",
                    help="profile each proxy's last run of each scenario with perf (cpu-clock "
                         "samples) and write DIR/perf-<proxy>-<scenario>.txt")
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
    os.makedirs(args.out, exist_ok=True)
    if args.target_url:
        return run_target(args)
    args.drivers = [d for d in args.drivers.split(",") if d]
    scenarios = [s for s in args.scenarios.split(",") if s]
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
            f"nginx auth {args.nginx_auth}")
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
            _, _, direct_ok = SCENARIOS[scenario]
            order = (["direct"] if direct_ok else []) + ["nginx"] + [f"sg-{d}" for d in args.drivers]
            for name in order:  # warm-up: pools filled, caches hot
                run_wrk(args, targets[name], scenario, tenants, env, 1)
            runs = {name: [] for name in order}
            for rnd in range(args.rounds):
                for name in order:
                    perf_out = None
                    if args.perf and name != "direct" and rnd == args.rounds - 1:
                        os.makedirs(args.perf, exist_ok=True)
                        perf_out = os.path.join(os.path.abspath(args.perf), f"perf-{name}-{scenario}")
                    r = run_wrk(args, targets[name], scenario, tenants, env, args.duration,
                                targets["direct"].pids, perf_out,
                                label=f"{scenario}-{name}-round{rnd + 1}")
                    runs[name].append(r)
                    log(f"  {scenario} round {rnd + 1} {name}: {r['rps']:,.0f} req/s "
                        f"p99 {r['p99']/1e3:.2f}ms {r['mbps']:.1f} MB/s "
                        f"{r['cpu_us_per_req']:.2f} us CPU/req errors {r['errors']} "
                        f"other load {r['foreign_cores']:.2f} cores")
            results[scenario] = {"runs": runs, "summary": {n: summarize(v) for n, v in runs.items()}}
        report(results, args)
        write_figures(args, results)
    finally:
        cleanup()
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def write_figures(args, results):
    figures = {"args": vars(args), "results": results}
    for path in filter(None, [args.json, os.path.join(args.out, "figures.json")]):
        with open(path, "w") as f:
            json.dump(figures, f, indent=1)
    log(f"figures, latency distributions (.hgrm) and plots (.svg) in {args.out}")


TARGET_SCENARIOS = {"search": "plain", "bulk": "bulk"}


def run_target(args):
    """Runs `--scenario` against `--target-url` for `--rounds` runs of `--duration` s each;
    every run leaves its figures, percentile distribution and plot in `--out`."""
    from urllib.parse import urlsplit, unquote

    scenario = TARGET_SCENARIOS.get(args.scenario or "search")
    if scenario is None:
        sys.exit(f"--scenario: use one of {', '.join(TARGET_SCENARIOS)}")
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: run loadtest/run.sh, which installs it")
    build(args)  # `searchgate latency` draws the distributions
    u = urlsplit(args.target_url)
    if u.scheme not in ("http", "https") or not u.hostname or u.username is None:
        sys.exit("--target-url: expected https://user:pass@host[:port]")
    port = u.port or (443 if u.scheme == "https" else 80)
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
    target = Target("target", None, None, [], url=f"{u.scheme}://{host}:{port}/")
    tenants = [{"user": unquote(u.username), "pass": unquote(u.password or ""), "host": host}]
    env = dict(os.environ, SG_BODY_BYTES=str(args.bulk_bytes), SG_INDEX=args.index)
    shown = f"{u.scheme}://{u.username}:****@{host}:{port}"
    log(f"command: {' '.join(a if a != args.target_url else shown for a in sys.argv)}")
    log(f"target {shown}, scenario {args.scenario or 'search'}, {args.rounds} runs of {args.duration} s")
    runs = []
    for rnd in range(args.rounds):
        r = run_wrk(args, target, scenario, tenants, env, args.duration,
                    label=f"{args.scenario or 'search'}-target-round{rnd + 1}")
        runs.append(r)
        log(f"  round {rnd + 1}: {r['rps']:,.0f} req/s p50 {r['p50']/1e3:.2f}ms "
            f"p99 {r['p99']/1e3:.2f}ms p99.9 {r['p999']/1e3:.2f}ms errors {r['errors']}")
    s = summarize(runs)
    log(f"median: {s['rps']:,.0f} req/s p99 {s['p99']/1e3:.2f}ms errors {s['errors']}")
    args.target_url = shown  # never write the password into figures.json
    write_figures(args, {args.scenario or "search": {"runs": {"target": runs}, "summary": {"target": s}}})


def report(results, args):
    log("")
    log("=" * 100)
    log("medians over rounds; latency in ms; MB/s = response bytes (bulk: request bodies); "
        "CPU = proxy CPU us per request; x = searchgate / nginx; goals judged on the median "
        "of per-round ratios")
    for scenario, res in results.items():
        s = res["summary"]
        log(f"\n[{scenario}]   {'':<3}      req/s      p50      p99    p99.9      MB/s  CPU/req")
        ngx = s["nginx"]
        if "direct" in s:
            log(fmt_row("direct", s["direct"]))
        log(fmt_row("nginx", ngx))
        bad = [n for n, v in s.items() if v["errors"]]
        if bad:
            log(f"  WARNING: {', '.join(bad)} had errors (non-2xx, timeouts, resets): "
                "the comparison is not valid; see the logs (--keep)")
        for d in args.drivers:
            name = f"sg-{d}"
            log(fmt_row(name, s[name], ngx))
            q = paired_ratios(res["runs"][name], res["runs"]["nginx"])
            res["summary"][name]["paired_ratios"] = q
            log(f"  {'':<14} median of per-round ratios: {fmt_ratios(q)}")
            for text, met in goals(scenario, q, s[name]["errors"]):
                log(f"      {'PASS' if met else 'FAIL'}  {name}: {text}")
    log("")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        cleanup()
        sys.exit(130)
