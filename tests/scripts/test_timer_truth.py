#!/usr/bin/env python3
"""Tests of scripts/timer-truth without a GPU: the ncu CSV parser on captured-looking output, the
grouping of kernels into launches, the verdicts, and the whole script driven against a fake ncu and
a fake caliber_ground_truth."""
import importlib.machinery
import importlib.util
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "timer-truth")


def load_script():
    loader = importlib.machinery.SourceFileLoader("timer_truth", SCRIPT)
    spec = importlib.util.spec_from_loader("timer_truth", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


tt = load_script()

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"')


def row(i, kernel, value, unit="nsecond", metric="gpu__time_duration.sum"):
    return (f'"{i}","4242","caliber_ground_truth","127.0.0.1","{kernel}","1","13","(256, 1, 1)",'
            f'"(1056, 1, 1)","0","9.0","Command line profiler metrics","{metric}","{unit}",'
            f'"{value}"')


def capture(rows):
    return "\n".join([
        "==PROF== Connected to process 4242 (/opt/caliber/bin/caliber_ground_truth)",
        "caliber_ground_truth: 3 launches of copy4MiB done",
        '==PROF== Profiling "copy_kernel(const uint4 *, uint4 *, unsigned long)" - 0: 0%....50%....100% - 1 pass',
        "==PROF== Disconnected from process 4242",
        HEADER] + rows) + "\n"


class ParseNcuCsv(unittest.TestCase):
    def test_captured_output(self):
        k = "copy_kernel(const uint4 *, uint4 *, unsigned long)"
        text = capture([row(1, k, "4,320"), row(0, k, "5008"), row(2, k, "4288.5"),
                        row(2, k, "99", metric="dram__bytes.sum")])
        got = tt.parse_ncu_csv(text)
        # ordered by ID, thousands separator dropped, the other metric ignored
        self.assertEqual(got, [(k, 5008.0), (k, 4320.0), (k, 4288.5)])

    def test_units_converted_to_ns(self):
        text = capture([row(0, "a", "1.5", "usecond"), row(1, "a", "2", "msecond"),
                        row(2, "a", "7", "ns")])
        self.assertEqual([ns for _, ns in tt.parse_ncu_csv(text)], [1500.0, 2e6, 7.0])

    def test_the_sm_clock_beside_the_duration(self):
        # --ncu-clock: both metrics in one capture, each parsed on its own, the clock in MHz
        text = capture([row(0, "a", "4000"), row(0, "a", "1,980,000,000", "hz",
                                                    metric=tt.CLOCK_METRIC),
                        row(1, "a", "4100"), row(1, "a", "1.2", "cycle/nsecond",
                                                    metric=tt.CLOCK_METRIC)])
        self.assertEqual([ns for _, ns in tt.parse_ncu_csv(text)], [4000.0, 4100.0])
        mhz = [v for _, v in tt.parse_ncu_csv(text, tt.CLOCK_METRIC, tt.CLOCK_UNITS_MHZ)]
        self.assertAlmostEqual(mhz[0], 1980.0)
        self.assertAlmostEqual(mhz[1], 1200.0)

    def test_unknown_unit_refused(self):
        with self.assertRaisesRegex(tt.NcuParseError, "unknown unit 'cycle'"):
            tt.parse_ncu_csv(capture([row(0, "a", "1", "cycle")]))

    def test_no_header_refused(self):
        with self.assertRaisesRegex(tt.NcuParseError, "no ncu CSV header"):
            tt.parse_ncu_csv("==PROF== Connected\n==ERROR== The application returned an error\n")

    def test_short_row_refused(self):
        with self.assertRaisesRegex(tt.NcuParseError, "fields"):
            tt.parse_ncu_csv(HEADER + '\n"0","1","x"\n')

    def test_header_only_gives_nothing(self):
        self.assertEqual(tt.parse_ncu_csv(capture([])), [])


class Launches(unittest.TestCase):
    def test_kernels_of_a_launch_summed(self):
        recs = [("gemm", 3000.0), ("reduce", 1000.0)] * 3
        durations, per = tt.per_launch_us(recs, 3)
        self.assertEqual(per, 2)
        self.assertEqual(durations, [4.0, 4.0, 4.0])

    def test_uneven_count_refused(self):
        with self.assertRaisesRegex(tt.NcuParseError, "5 kernels profiled for 2 launches"):
            tt.per_launch_us([("a", 1.0)] * 5, 2)
        with self.assertRaises(tt.NcuParseError):
            tt.per_launch_us([], 2)

    def test_first_launch_left_out(self):
        self.assertEqual(tt.truth_of([100.0, 4.0, 5.0, 6.0]), 5.0)
        self.assertEqual(tt.truth_of([7.0]), 7.0)


def summary(lat, spread=0.001, cost=0.05):
    return {"latency_us": lat, "spread": spread, "cost_s": cost}


class Judge(unittest.TestCase):
    def test_pass(self):
        self.assertEqual(tt.judge(100.0, {"graph": summary(104.9), "direct": summary(95.1)}),
                         ("PASS", []))

    def test_relative_miss(self):
        verdict, misses = tt.judge(100.0, {"graph": summary(105.2), "direct": summary(100)})
        self.assertEqual(verdict, "FAIL")
        self.assertEqual(misses, ["graph: +5.2% off"])

    def test_absolute_tolerance_for_short_kernels(self):
        # 4.3 us: 5% is 0.215 us, so 0.3 us is the bound
        self.assertEqual(tt.judge(4.3, {"graph": summary(4.58), "direct": summary(4.02)})[0], "PASS")
        self.assertEqual(tt.judge(4.3, {"graph": summary(4.61), "direct": summary(4.3)})[0], "FAIL")

    def test_spread_bound_depends_on_length(self):
        s = {"graph": summary(10, spread=0.025), "direct": summary(10)}
        self.assertEqual(tt.judge(10.0, s)[0], "PASS")
        s = {"graph": summary(30, spread=0.015), "direct": summary(30)}
        self.assertEqual(tt.judge(30.0, s), ("FAIL", ["graph: spread 1.50% > 1%"]))

    def test_cost_and_missing_measurement(self):
        verdict, misses = tt.judge(10.0, {"graph": summary(10, cost=0.2)})
        self.assertEqual(verdict, "FAIL")
        self.assertEqual(misses, ["graph: cost 0.200 s > 0.15 s", "direct: no measurement"])

    def test_no_truth(self):
        self.assertEqual(tt.judge(None, {"graph": summary(10), "direct": summary(10)}),
                         ("NO TRUTH", []))


def trace_summary(kernel_sum, spread=0.0, cost=0.02, methods=("kernel-trace",)):
    return {"latency_us": kernel_sum, "kernel_sum_us": kernel_sum, "kernel_sum_spread": spread,
            "cost_s": cost, "sample_methods": list(methods)}


class JudgeTrace(unittest.TestCase):
    def test_pass_within_two_percent_or_a_tenth(self):
        s = {"graph": trace_summary(37.5 * 1.019), "direct": trace_summary(37.5 * 0.981)}
        self.assertEqual(tt.judge_trace(37.5, s), ("PASS", []))
        s = {"graph": trace_summary(3.59), "direct": trace_summary(3.41)}  # 2% of 3.5 < 0.1 us
        self.assertEqual(tt.judge_trace(3.5, s)[0], "PASS")
        s = {"graph": trace_summary(3.61), "direct": trace_summary(3.5)}
        self.assertEqual(tt.judge_trace(3.5, s)[0], "FAIL")

    def test_spread_cost_and_method(self):
        s = {"graph": trace_summary(10, spread=0.006), "direct": trace_summary(10, cost=0.06)}
        self.assertEqual(tt.judge_trace(10.0, s),
                         ("FAIL", ["graph: spread 0.60% > 0.5%", "direct: cost 0.060 s > 0.05 s"]))
        s = {"graph": trace_summary(200, cost=0.1),
             "direct": trace_summary(200, methods=("held",))}
        verdict, misses = tt.judge_trace(200.0, s)
        self.assertEqual(verdict, "FAIL")
        self.assertEqual(misses, ["direct: sample methods ['held'], not the trace"])

    def test_ncu_net_of_its_per_kernel_floor(self):
        # ncu reads an empty kernel 0.86 us above the records (the H200, 2026-12-01): net of that
        # floor, times the kernels of a launch, a 3-kernel provider agrees; raw, it does not
        ncu = {"kernels": {"empty": {"cold": {"truth_us": 1.44}},
                           "multi3": {"cold": {"truth_us": 10.91, "kernels_per_launch": 3}}}}
        by = {("empty", t, "cold"): trace_summary(0.58) for t in tt.TIMERS}
        offsets = tt.floor_offsets(ncu, by)
        self.assertAlmostEqual(offsets[("graph", "cold")], 0.86)
        s = {t: trace_summary(8.33) for t in tt.TIMERS}
        self.assertEqual(tt.judge_trace(10.91, s)[0], "FAIL")
        net = {t: 10.91 - 3 * offsets[(t, "cold")] for t in tt.TIMERS}
        self.assertEqual(tt.judge_trace(10.91, s, net), ("PASS", []))
        self.assertEqual(tt.floor_offsets({"kernels": {}}, by), {})


FAKE_BIN = r'''#!/usr/bin/env python3
import json, sys
a = sys.argv[1:]
kernels = [{"kernel": "spin10us", "true_us": 10.0, "bytes": 0, "fits_l2": True},
           {"kernel": "copy4MiB", "true_us": 0.0, "bytes": 8388608, "fits_l2": True}]
if "--list" in a:
    for k in kernels: print(json.dumps(k))
    sys.exit(0)
if "--launch-only" in a:
    sys.exit(0)
lat = {"spin10us": 10.02, "copy4MiB": 2.4}
for k in kernels:
    for t in ("graph", "direct"):
        for l2 in ("cold", "warm"):
            print(json.dumps({"type": "row", "kernel": k["kernel"], "timer": t, "l2": l2, "ok": True,
                              "latency_us": lat[k["kernel"]], "process": 1}))
            print(json.dumps({"type": "summary", "kernel": k["kernel"], "timer": t, "l2": l2,
                              "latency_us": lat[k["kernel"]], "spread": 0.001, "cost_s": 0.05}))
'''

# ncu: prints a captured-looking CSV for the kernel after --launch-only: 4.3 us cold, 2.4 us warm;
# the spin 10.1 us; the first launch slower (it is left out).
FAKE_NCU = r'''#!/usr/bin/env python3
import sys
a = sys.argv[1:]
if a == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2099.1.0.0 (fake)")
    sys.exit(0)
assert "--print-units" in a and "--clock-control" in a and "--profile-from-start" in a, a
kernel = a[a.index("--launch-only") + 1]
count = int(a[a.index("--count") + 1])
cold = a[a.index("--cache-control") + 1] == "all"
ns = 10100 if kernel == "spin10us" else (4300 if cold else 2400)
print("==PROF== Connected to process 1 (fake)")
print(HEADER)
for i in range(count):
    v = ns * 3 if i == 0 else ns
    print(row(i, "k", f"{v:,}"))
print("==PROF== Disconnected from process 1")
'''


class WholeScript(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.bin = os.path.join(d, "bin")
        os.makedirs(self.bin)
        self.gt = os.path.join(self.bin, "caliber_ground_truth")
        self.ncu = os.path.join(d, "ncu")
        helpers = f"HEADER = {HEADER!r}\n" + textwrap.dedent('''
            def row(i, kernel, value, unit="nsecond", metric="gpu__time_duration.sum"):
                return (f'"{i}","1","x","h","{kernel}","1","13","(1, 1, 1)","(1, 1, 1)","0","9.0",'
                        f'"s","{metric}","{unit}","{value}"')
            ''')
        for path, text in ((self.gt, FAKE_BIN), (self.ncu, FAKE_NCU.replace(
                "import sys\n", "import sys\n" + helpers, 1))):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, *extra):
        res = os.path.join(self.tmp.name, "res")
        p = subprocess.run([sys.executable, SCRIPT, "--bin", self.bin, "--results", res,
                            "--ncu", self.ncu, "--count", "5", "--processes", "1", *extra],
                           capture_output=True, text=True)
        return p, res

    def test_table_and_json(self):
        p, res = self.run_script()
        # the timers read the warm 2.4 us for the cold copy: a miss, so exit 1
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        with open(os.path.join(res, "timer-truth.json"), encoding="utf-8") as f:
            out = json.load(f)
        rows = {(r["kernel"], r["regime"]): r for r in out["rows"]}
        self.assertEqual(rows[("copy4MiB", "cold")]["ncu_us"], 4.3)
        self.assertEqual(rows[("copy4MiB", "cold")]["verdict"], "FAIL")
        self.assertEqual(rows[("copy4MiB", "warm")]["verdict"], "PASS")
        # a spin's truth is its target; ncu's figure is shown beside it
        self.assertEqual(rows[("spin10us", "cold")]["truth_us"], 10.0)
        self.assertEqual(rows[("spin10us", "cold")]["ncu_us"], 10.1)
        self.assertIn("copy4MiB           cold       4.300     4.300   2.400 (-44.2%)", p.stdout)
        self.assertIn("2099.1.0.0", out["title"])

    def test_missing_ncu_still_times(self):
        p, res = self.run_script("--ncu", os.path.join(self.tmp.name, "no-such-ncu"))
        self.assertIn("ncu not found", p.stdout)
        with open(os.path.join(res, "timer-truth.json"), encoding="utf-8") as f:
            rows = {(r["kernel"], r["regime"]): r for r in json.load(f)["rows"]}
        self.assertEqual(rows[("copy4MiB", "cold")]["verdict"], "NO TRUTH")
        self.assertEqual(rows[("spin10us", "cold")]["verdict"], "PASS")
        self.assertEqual(p.returncode, 1)  # the ncu part failed

    def test_bad_input(self):
        for args in (["--parts", "ncu,bogus"], ["--count", "1"], ["--kernels", "copy4MiB,nope"]):
            p, res = self.run_script(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(args[0], p.stderr)
            self.assertFalse(os.path.exists(res), args)


if __name__ == "__main__":
    unittest.main()
