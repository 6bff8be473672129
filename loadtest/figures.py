"""Figures of a load test run: medians over rounds, paired per-round ratios to a base
(nginx, or for the `metrics` scenario the same edge recording nothing), the formatted rows
and the goals each scenario is judged on. Pure: no processes, no I/O but the caller's log."""

import statistics


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
        # --perf-stat: system-wide event counts per request.
        "per_req": {k.split(":", 1)[1]: med(k) for k in runs[0] if k.startswith("per_req:")},
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
    for ev, n in s.get("per_req", {}).items():
        row += f"  {ev}={n:.2f}/req"
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
    """The goals of issues 15 and 13 (`metrics`) for one scenario, judged on the paired ratios `q` (meant
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
    elif scenario == "metrics":
        # issue 13: recording and exposition cost under 2 % of req/s
        out.append(("req/s >= 0.98x the edge recording nothing", q["rps"] >= 0.98))
        out.append(("CPU/request <= 1.02x the edge recording nothing", q["cpu_us_per_req"] <= 1.02))
    elif scenario == "plain_2w":
        out.append(("req/s >= 1.15x nginx (two workers each)", q["rps"] >= 1.15))
    out.append(("no errors", errors == 0))
    return out
