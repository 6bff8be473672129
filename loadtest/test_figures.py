"""Table tests of figures.py (pure): the paired ratios, the ceiling that `direct` sets and
how goals above it are marked. Run by tests/it/loadtest_figures.rs (`cargo test`)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from figures import ceiling, goals, paired_ratios, summarize, with_ceiling  # noqa: E402


def run(rps, mbps=1.0, cpu=10.0, p99=1000, p999=2000):
    return {"rps": rps, "mbps": mbps, "cpu_us_per_req": cpu, "p99": p99, "p999": p999}


class PairedRatios(unittest.TestCase):
    def test_median_of_per_round_ratios_not_ratio_of_medians(self):
        # Rounds 1.10, 1.50, 1.20: median 1.20; the ratio of medians would be 120/100.
        ours = [run(110), run(150), run(120)]
        base = [run(100), run(100), run(100)]
        self.assertAlmostEqual(paired_ratios(ours, base)["rps"], 1.20)


class Summarize(unittest.TestCase):
    def test_a_figure_no_run_measured_is_left_out_not_zero(self):
        # A run against a cluster URL: no CPU figures (its processes are not ours).
        target = [dict(run(100), requests=400, errors=0, p50=500) for _ in range(3)]
        for r in target:
            del r["cpu_us_per_req"]
        s = summarize(target)
        self.assertNotIn("cpu_us_per_req", s)
        self.assertNotIn("foreign_cores", s)
        self.assertEqual(s["requests"], 1200)
        local = [dict(run(100, cpu=12.0), requests=10, errors=1, p50=5, busy_cores=1.0,
                      foreign_cores=0.1) for _ in range(3)]
        s = summarize(local)
        self.assertEqual(s["cpu_us_per_req"], 12.0)
        self.assertEqual(s["errors"], 3)


class Ceiling(unittest.TestCase):
    def test_none_without_direct_runs(self):
        self.assertIsNone(ceiling(None, [run(100)]))
        self.assertIsNone(ceiling([], [run(100)]))

    def test_direct_over_nginx_per_round(self):
        roof = ceiling([run(104, mbps=5200), run(110, mbps=5500)],
                       [run(100, mbps=5000), run(100, mbps=5000)])
        self.assertAlmostEqual(roof["rps"], 1.07)
        self.assertAlmostEqual(roof["mbps"], 1.07)

    # Issue 15's goals against ceilings below, at and above them.
    CASES = [
        # scenario, ceiling (rps, mbps), goal text marked as unreachable here?
        ("bulk", (1.04, 1.04), True),    # 1.10x MB/s needs more than no proxy at all
        ("bulk", (1.10, 1.10), False),   # at the ceiling: reachable in principle
        ("bulk_tiny", (0.99, 0.99), True),
        ("bulk_tiny", (1.00, 1.00), False),
        ("plain", (1.14, 0.90), True),   # req/s is judged, MB/s is not a plain goal
        ("plain", (1.24, 0.90), False),
    ]

    def test_goals_above_the_ceiling_are_marked(self):
        q = run(1.0, mbps=1.0, cpu=1.0, p99=1.0, p999=1.0)
        for scenario, (rps, mbps), marked in self.CASES:
            roof = {"rps": rps, "mbps": mbps}
            out = with_ceiling(goals(scenario, q, 0), roof)
            throughput = [t for t, _, need in out if need is not None]
            self.assertEqual(len(throughput), 1, scenario)
            self.assertEqual("ceiling" in throughput[0], marked, (scenario, roof, throughput))
            # Only the throughput goal is ever marked; CPU, latency and errors are not.
            others = [t for t, _, need in out if need is None]
            self.assertFalse(any("ceiling" in t for t in others), others)

    def test_marking_does_not_change_met(self):
        q = run(1.2, mbps=1.2, cpu=0.7, p99=0.5, p999=0.5)
        plain = goals("plain", q, 0)
        marked = with_ceiling(plain, {"rps": 1.1, "mbps": 1.0})
        self.assertEqual([m for _, m, _ in plain], [m for _, m, _ in marked])
        self.assertTrue(all(m for _, m, _ in marked))

    def test_no_ceiling_leaves_goals_alone(self):
        q = run(1.0)
        self.assertEqual(with_ceiling(goals("tls", q, 0), None), goals("tls", q, 0))


class TenancyBenchReport(unittest.TestCase):
    def test_the_report_counts_the_failures_the_exit_status_is_made_of(self):
        import contextlib
        import io
        import types

        import tenancy_bench

        def measured(errors):
            return dict(run(100), requests=400, errors=errors, p50=500, busy_cores=1.0,
                        foreign_cores=0.1)

        args = types.SimpleNamespace(upstream="fast", rounds=2, duration=1)
        for errors, want in [((0, 0), 0), ((2, 1), 3)]:
            runs = {"mt": [measured(errors[0]), measured(0)], "st": [measured(errors[1]),
                                                                    measured(0)]}
            results = {"bulk": {"runs": runs,
                                "summary": {c: summarize(v) for c, v in runs.items()}}}
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(tenancy_bench.report(results, args), want)
            self.assertEqual("WARNING: 3 errors" in out.getvalue(), want == 3, out.getvalue())


if __name__ == "__main__":
    unittest.main()
