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


# Triton 3.4+'s asynchronous compile, as far as a kernel's warmup uses it: while a mode is
# active, a kernel launched with warmup=True hands its compile to the mode's executor; leaving
# the mode waits for every compile (and raises the first failure unless ignore_errors).
# STANDIN_TRITON_NO_ASYNC=1: a Triton without it.
class _ActiveMode:
    def __init__(self):
        self.mode = None

    def get(self):
        return self.mode


class _Namespace:
    pass


runtime = _Namespace()
runtime._async_compile = _Namespace()
runtime._async_compile.active_mode = _ActiveMode()

if os.environ.get("STANDIN_TRITON_NO_ASYNC") != "1":
    class AsyncCompileMode:
        def __init__(self, executor, *, ignore_errors=False):
            self.executor = executor
            self.ignore_errors = ignore_errors
            self.futures = {}

        def submit(self, key, compile_fn):
            if key not in self.futures:
                self.futures[key] = self.executor.submit(compile_fn)
            return self.futures[key]

        def __enter__(self):
            if runtime._async_compile.active_mode.mode is not None:
                raise RuntimeError("Another AsyncCompileMode is already active")
            runtime._async_compile.active_mode.mode = self
            return self

        def __exit__(self, *exc):
            runtime._async_compile.active_mode.mode = None
            futures, self.futures = list(self.futures.values()), {}
            for f in futures:
                e = f.exception()
                if e is not None and not self.ignore_errors:
                    raise e
            return False

    runtime._async_compile.AsyncCompileMode = AsyncCompileMode
