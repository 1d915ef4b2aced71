"""caliber.bench / caliber.measure on the cpu backend: plain Python callables, host timer."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("CALIBER_NO_TORCH", "1")
import common  # noqa: E402,F401

import caliber  # noqa: E402

FAST = dict(backend="cpu", timeout_s=0.5)


def work():
    s = 0
    for i in range(2000):
        s += i * i
    return s


class DtypeNames(unittest.TestCase):
    def test_the_python_table_is_the_librarys(self):
        """caliber/_dtypes.py stays importable without the library (scripts read FlagGems'
        records with it from the source tree), so it holds a copy of the library's table: the
        same pairs, both ways."""
        from caliber import _dtypes, _lib
        ours = {caliber_name: torch for torch, caliber_name in _dtypes.DTYPES.items()}
        self.assertEqual(ours, _lib.settings()["torch_dtypes"])


class BenchApi(unittest.TestCase):
    def test_bench_returns_ms_like_do_bench(self):
        ms = caliber.bench(work, **FAST)
        self.assertIsInstance(ms, float)
        self.assertGreater(ms, 0)
        self.assertLess(ms, 100)

    def test_bench_defaults_to_do_bench_cudagraphs_regime(self):
        # warm L2 and K launches back to back (docs/python.md); caliber.measure keeps the CLI's
        cb = sys.modules["caliber.bench"]
        seen = []
        real = cb.measure

        def spy(fn, **kw):
            seen.append(kw)
            return real(fn, **kw)
        cb.measure = spy
        try:
            caliber.bench(work, **FAST)
            caliber.bench(work, l2="cold", per_launch=True, **FAST)
        finally:
            cb.measure = real
        self.assertEqual((seen[0]["l2"], seen[0]["per_launch"]), ("warm", False))
        self.assertEqual((seen[1]["l2"], seen[1]["per_launch"]), ("cold", True))
        m = caliber.measure(work, **FAST)
        self.assertNotEqual(m.l2_method, "warm")  # measure's default is cold
        with self.assertRaisesRegex(ValueError, "settle_window_s"):
            caliber.measure(work, settle_window_s=0, **FAST)

    def test_sleep_is_measured_in_ms(self):
        # 2 ms of sleep per call: the host timer must read about that, not the call's overhead
        # (the upper bound leaves room for a loaded CI host's late wake-ups).
        ms = caliber.bench(lambda: time.sleep(0.002), return_mode="median", **FAST)
        self.assertGreater(ms, 1.9)
        self.assertLess(ms, 20.0)

    def test_quantiles_and_return_modes(self):
        q = caliber.bench(work, quantiles=[0.2, 0.5, 0.8], **FAST)
        self.assertEqual(len(q), 3)
        self.assertLessEqual(q[0], q[1])
        self.assertLessEqual(q[1], q[2])
        one = caliber.bench(work, quantiles=[0.5], **FAST)
        self.assertIsInstance(one, float)  # one quantile: the value alone, as Triton's
        allv = caliber.bench(work, return_mode="all", **FAST)
        self.assertIsInstance(allv, list)
        self.assertGreater(len(allv), 5)
        lo, hi = caliber.bench(work, quantiles=[0, 1], **FAST)  # one measurement's extremes
        self.assertLessEqual(lo, hi)
        for mode in ("min", "max", "mean", "median"):
            v = caliber.bench(work, return_mode=mode, **FAST)
            self.assertIsInstance(v, float)
            self.assertGreater(v, 0)

    def test_measure_result_object(self):
        m = caliber.measure(work, **FAST)
        self.assertTrue(m.ok)
        self.assertEqual(m.backend, "cpu")
        self.assertEqual(m.timer, "direct")
        self.assertIn("timer=direct", m.markers)
        self.assertEqual(m.regime, "sustained")
        self.assertTrue(m.stop_reason)
        self.assertIsInstance(m.converged, bool)
        self.assertGreater(len(m.samples_ms), 0)
        self.assertGreater(m.wall_s, 0)
        # cold is the default, as the CLI's
        self.assertIn(m.l2_method, ("flush-per-sample", "flush-per-launch"))
        warm = caliber.measure(work, l2="warm", clock="burst", **FAST)
        self.assertEqual(warm.l2_method, "warm")
        self.assertEqual(warm.regime, "burst")

    def test_grad_to_none_and_warmup_rep(self):
        class T:
            grad = 1
        t = T()
        ms = caliber.bench(work, warmup=5, rep=50, grad_to_none=[t], backend="cpu")
        self.assertGreater(ms, 0)
        self.assertIsNone(t.grad)

    def test_exception_outside_capture_is_raised(self):
        def boom():
            raise KeyError("boom")
        with self.assertRaises(KeyError):
            caliber.bench(boom, **FAST)

    def test_bad_arguments(self):
        with self.assertRaisesRegex(ValueError, "return_mode 'avg'"):
            caliber.bench(work, return_mode="avg", **FAST)
        with self.assertRaisesRegex(ValueError, "l2: 'tepid'"):
            caliber.measure(work, l2="tepid", **FAST)
        with self.assertRaisesRegex(ValueError, "clock: 'turbo'"):
            caliber.measure(work, clock="turbo", **FAST)
        with self.assertRaisesRegex(ValueError, "quantiles"):
            caliber.measure(work, quantiles=[1.5], **FAST)
        with self.assertRaisesRegex(ValueError, "timer 'fast'"):
            caliber.measure(work, timer="fast", **FAST)
        with self.assertRaises(TypeError):
            caliber.bench(42, **FAST)
        with self.assertRaisesRegex(caliber.CaliberError, "nosuch"):
            caliber.measure(work, backend="nosuch")

    def test_non_finite_and_out_of_range_options_are_refused(self):
        # JSON has no NaN: the option is refused by name, never sent as a bare NaN the library
        # cannot parse; a value past a knob's range is refused by that knob's rule, not cut to an
        # int or capped in silence.
        for kw, words in ((dict(min_time_s=float("nan")), "min_time_s=nan"),
                          (dict(warmup_s=float("inf")), "warmup_s=inf"),
                          (dict(quantiles=[0.5, float("nan")]), r"quantiles\[1\]=nan"),
                          (dict(min_samples=10**12), "min_samples: 1000000000000 is not allowed"),
                          (dict(min_samples=0), "min_samples: 0 is not allowed"),
                          (dict(repeat=10**6), "repeat: 1000000 is not allowed"),
                          # the CLI's rule for the pair: a minimum time the timeout cannot hold
                          (dict(min_time_s=0.3, timeout_s=0.2),
                           "min_time_s: '0.3' s of measured time cannot fit in timeout_s '0.2'")):
            with self.subTest(kw=kw):
                opts = dict(FAST)
                opts.update(kw)
                with self.assertRaisesRegex(ValueError, words) as raised:
                    caliber.measure(work, **opts)
                self.assertNotIn("json.exception", str(raised.exception))

    def test_a_short_rep_shortens_the_minimum_time(self):
        """bench's rep (Triton's budget in ms) is the timeout; one shorter than the default
        minimum time takes the minimum time down with it, as do_bench takes any rep."""
        self.assertGreater(caliber.bench(work, backend="cpu", rep=5), 0)
        with self.assertRaisesRegex(ValueError, "min_time_s: '0.01'"):
            caliber.bench(work, backend="cpu", rep=5, min_time_s=0.01)

    def test_graph_timer_without_graph_capture_is_refused(self):
        # The CLI refuses --timer graph on cpu (exit 2); measure and bench refuse it the same way
        # (the device's capabilities say it has no capture), never timing direct in silence.
        for call in (caliber.measure, caliber.bench):
            with self.subTest(call=call.__name__):
                with self.assertRaisesRegex(ValueError, "timer 'graph': backend 'cpu' has no graph "
                                                        "capture; allowed on it: auto, direct"):
                    call(work, timer="graph", **FAST)
        self.assertEqual(caliber.measure(work, timer="auto", **FAST).timer, "direct")

    def test_backend_of_the_wrong_type_is_refused_by_name(self):
        for bad in (5, True, ["cpu"]):
            with self.subTest(backend=bad):
                with self.assertRaisesRegex(TypeError, r"backend=.* is not allowed; allowed: None "
                                                       r"\(ZL_BACKEND, else auto\), 'auto' or a "
                                                       r"backend's name \(.*cpu\)"):
                    caliber.measure(work, backend=bad, timeout_s=0.5)

    def test_zl_direct_repeat_is_the_repeat_unless_given(self):
        """ZL_DIRECT_REPEAT (the run's knob) sets caliber.measure's repeat as it sets the CLI's;
        an argument wins; a bad value is refused naming the variable."""
        saved = os.environ.get("ZL_DIRECT_REPEAT")
        try:
            os.environ["ZL_DIRECT_REPEAT"] = "3"
            self.assertIn("repeat=3", caliber.measure(work, **FAST).markers)
            self.assertNotIn("repeat=3", caliber.measure(work, repeat=1, **FAST).markers)
            os.environ["ZL_DIRECT_REPEAT"] = "x"
            with self.assertRaisesRegex(ValueError, "ZL_DIRECT_REPEAT: 'x' is not allowed"):
                caliber.measure(work, **FAST)
        finally:
            if saved is None:
                os.environ.pop("ZL_DIRECT_REPEAT", None)
            else:
                os.environ["ZL_DIRECT_REPEAT"] = saved

    def test_sample_method_trace_without_one_falls_back_with_the_marker(self):
        # The cpu backend has no kernel trace: asked for, the events (the host timer) time it and
        # the row says so; by default (auto) nothing is marked.
        marker = caliber.markers()["events_no_trace"]
        self.assertEqual(marker, "SAMPLE_METHOD_EVENTS_NO_TRACE")
        m = caliber.measure(work, sample_method="trace", **FAST)
        self.assertTrue(m.ok, m.error)
        self.assertIn(marker, m.markers)
        self.assertIn("no kernel trace", m.note)
        self.assertNotEqual(m.sample_method, "kernel-trace")
        plain = caliber.measure(work, **FAST)
        self.assertNotIn(marker, plain.markers)
        os.environ["CALIBER_SAMPLE_METHOD"] = "trace"
        try:
            self.assertIn(marker, caliber.measure(work, **FAST).markers)
        finally:
            del os.environ["CALIBER_SAMPLE_METHOD"]
        with self.assertRaisesRegex(ValueError, "sample_method 'cupti'"):
            caliber.measure(work, sample_method="cupti", **FAST)

    def test_marker_spellings_come_from_the_library(self):
        mk = caliber.markers()
        self.assertEqual(mk["direct_no_graph"], "BENCHMARK_DIRECT_NO_CUDAGRAPH")
        self.assertEqual(mk["stop_missed"], "STOP_NOT_CONVERGED")

    def test_option_words_and_defaults_come_from_the_library(self):
        # The package validates against the library's knob table, not a list of its own.
        from caliber import _lib
        st = _lib.settings()
        self.assertEqual(st["words"]["timer"], ["auto", "graph", "direct"])
        self.assertEqual(st["words"]["clock"], ["sustained", "burst"])
        self.assertEqual(st["words"]["return_mode"], ["min", "max", "mean", "median", "all"])
        self.assertEqual(st["defaults"]["l2"], "cold")
        self.assertEqual(st["defaults"]["min_samples"], 10)
        with self.assertRaisesRegex(ValueError, "timer 'fast'; allowed: auto, graph, direct"):
            caliber.measure(work, timer="fast", **FAST)


if __name__ == "__main__":
    unittest.main(verbosity=2)
