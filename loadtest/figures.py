"""Figures of a load test run: medians over rounds, paired per-round ratios to a base
(nginx, or for the `metrics` scenario the same edge recording nothing), the formatted rows
and the goals each scenario is judged on. Pure: no processes, no I/O but the caller's log."""

import statistics


def summarize(runs):
    """Medians over rounds of what every run measured; a figure some run lacks (CPU of a
    cluster URL's processes, which are not ours to see) is left out, never set to 0."""
    med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
    reqs = sum(r["requests"] for r in runs)
    out = {
        "rounds": len(runs),
        "rps": med("rps"),
        "mbps": med("mbps"),
        "p50": med("p50"),
        "p99": med("p99"),
        "p999": med("p999"),
        "errors": sum(r["errors"] for r in runs),
        "requests": reqs,
        "rps_all": [round(r["rps"]) for r in runs],
        # --perf-stat: system-wide event counts per request.
        "per_req": {k.split(":", 1)[1]: med(k) for k in runs[0] if k.startswith("per_req:")},
    }
    for k in ("cpu_us_per_req", "busy_cores", "foreign_cores"):
        if all(k in r for r in runs):
            out[k] = med(k)
    return out


def fmt_row(name, s, base=None):
    row = (f"  {name:<14} {s['rps']:>10,.0f} {s['p50']/1e3:>8.3f} {s['p99']/1e3:>8.3f} "
           f"{s['p999']/1e3:>8.3f} {s['mbps']:>9.1f} {s['cpu_us_per_req']:>8.2f}")
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


def ceiling(direct_runs, base_runs):
    """The most any proxy could show against the base on this layout: per-round ratios of
    `direct` (wrk straight at the upstream, no proxy at all) to the base, median. With one
    core for the proxy and one for wrk and the upstream, the second core limits what passes
    through a proxy: a proxy costs it at least what `direct` does per request (wrk and the
    upstream make the same calls, plus the cross-core wake-ups), so no proxy's req/s or MB/s
    can pass `direct`'s (on a host at cubic: on one at BBR, `direct`'s sockets are paced and
    the edge's upstream ones are not, so the caller gives none). `None` where the scenario
    has no `direct` run (TLS, mixed)."""
    if not direct_runs:
        return None
    return paired_ratios(direct_runs, base_runs)


def with_ceiling(goal_list, roof):
    """Marks each throughput goal (req/s or MB/s) above what the layout lets any proxy show
    (`roof`: `ceiling`'s ratios): met or not, the reader learns it could not be met here."""
    if roof is None:
        return goal_list
    out = []
    for text, met, need in goal_list:
        if need is not None and roof[need[0]] < need[1]:
            text += f" (above this layout's ceiling: no proxy at all reaches x{roof[need[0]]:.2f})"
        out.append((text, met, need))
    return out


def goals(scenario, q, errors):
    """The goals of issues 15 and 13 (`metrics`) for one scenario, judged on the paired ratios `q` (meant
    against nginx with `--nginx-auth map`, the default): (text, met, need), `need` the
    throughput ratio a goal asks for as (`"rps"` or `"mbps"`, ratio), else None."""
    out = []
    if scenario in ("plain", "mixed"):
        out.append(("req/s >= 1.15x nginx", q["rps"] >= 1.15, ("rps", 1.15)))
        out.append(("CPU/request <= 0.80x nginx", q["cpu_us_per_req"] <= 0.80, None))
        out.append(("p99 <= 0.80x nginx", q["p99"] <= 0.80, None))
        out.append(("p99.9 <= 0.80x nginx", q["p999"] <= 0.80, None))
    elif scenario == "tls":
        out.append(("req/s >= 1.20x nginx", q["rps"] >= 1.20, ("rps", 1.20)))
    elif scenario == "bulk":
        out.append(("MB/s >= 1.10x nginx", q["mbps"] >= 1.10, ("mbps", 1.10)))
    elif scenario == "bulk_tiny":
        out.append(("MB/s >= 1.0x nginx", q["mbps"] >= 1.0, ("mbps", 1.0)))
    elif scenario == "metrics":
        # issue 13: recording and exposition cost under 2 % of req/s
        out.append(("req/s >= 0.98x the edge recording nothing", q["rps"] >= 0.98, None))
        out.append(("CPU/request <= 1.02x the edge recording nothing", q["cpu_us_per_req"] <= 1.02, None))
    elif scenario == "plain_2w":
        out.append(("req/s >= 1.15x nginx (two workers each)", q["rps"] >= 1.15, ("rps", 1.15)))
    out.append(("no errors", errors == 0, None))
    return out
