"""Stand-in Triton: caliber must route every FlagGems timing call to its own timers.

Only FlagGems' own runs beside caliber's (scripts/flaggems-check, with STANDIN_OWN_DO_BENCH=1 in
their environment) time through it: then do_bench and do_bench_cudagraph return the median wall
time of a few calls in ms, as Triton's return a median. STANDIN_EXPECT_REP=MS makes them raise when
FlagGems passed another `rep` (its --iter), so that a test sees the knob arrive."""

import os
import statistics
import time

__version__ = "3.6.0+standin"


def _own(fn, name, rep):
    if os.environ.get("STANDIN_OWN_DO_BENCH") != "1":
        raise RuntimeError("stand-in triton.testing.%s was called: caliber must time it" % name)
    expect = os.environ.get("STANDIN_EXPECT_REP")
    if expect is not None and str(rep) != expect:
        raise RuntimeError("stand-in triton.testing.%s: rep=%r, expected %s" % (name, rep, expect))
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


class _Testing:
    @staticmethod
    def do_bench(fn, *args, **kwargs):
        return _own(fn, "do_bench", kwargs.get("rep"))

    @staticmethod
    def do_bench_cudagraph(fn, *args, **kwargs):
        return _own(fn, "do_bench_cudagraph", kwargs.get("rep"))


testing = _Testing()
