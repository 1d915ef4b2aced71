"""Stand-in Triton: caliber must route every FlagGems timing call to its own timers.

Only FlagGems' own runs beside caliber's (scripts/flaggems-check, with STANDIN_OWN_DO_BENCH=1 in
their environment) time through it: then do_bench and do_bench_cudagraph return the median wall
time of a few calls in ms, as Triton's return a median. STANDIN_EXPECT_REP=MS makes them raise when
FlagGems passed another `rep` (its --iter), so that a test sees the knob arrive;
STANDIN_BREAKS_CAPTURE=OP[,OP...] breaks a capture for the rest of the process (_capture)."""

import os
import statistics
import sys
import time

__version__ = "3.6.0+standin"


_captures_broken = []  # the op whose capture failed in this process (STANDIN_BREAKS_CAPTURE)


def _capture(name):
    """STANDIN_BREAKS_CAPTURE=OP[,OP...]: do_bench_cudagraph of a benchmark whose op_name is one
    of the OPs fails, and so does every later do_bench_cudagraph of the process, as on a GPU a
    backward op's autograd under capture leaves torch's later captures failing."""
    ops = [x for x in os.environ.get("STANDIN_BREAKS_CAPTURE", "").split(",") if x]
    if not ops or name != "do_bench_cudagraph":
        return
    if _captures_broken:
        raise RuntimeError("Offset increment outside graph capture encountered unexpectedly "
                           "(stand-in)")
    frame = sys._getframe(2)
    while frame is not None:
        op = getattr(frame.f_locals.get("self"), "op_name", None)
        if op in ops:
            _captures_broken.append(op)
            raise RuntimeError("operation would make the legacy stream depend on a capturing "
                               "blocking stream (stand-in, %s)" % op)
        frame = frame.f_back


def _own(fn, name, rep):
    if os.environ.get("STANDIN_OWN_DO_BENCH") != "1":
        raise RuntimeError("stand-in triton.testing.%s was called: caliber must time it" % name)
    _capture(name)
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


# Triton's Autotuner, as far as FlagGems' kernels under plain @triton.autotune use it: the choice
# of a key lives in `cache` (a dict, this process only); a key not in it is swept (`_bench` of
# every config, `bench_time`, `configs_timings`), then the best config launched. A config's time
# is planted: fastest at BLOCK=STANDIN_PLAIN_BEST (default 32). Each benchmark logs a line
# `autotune-bench NAME CONFIG` in STANDIN_TUNE_LOG. FlagGems' LibTuner subclasses it and
# overrides run (the stand-in's utils/libentry.py too).
class Autotuner:
    def __init__(self, fn, arg_names, configs, key, **_ignored):
        self.fn = fn
        self.base_fn = fn
        while hasattr(self.base_fn, "fn"):  # Triton's: the innermost function, for its name
            self.base_fn = self.base_fn.fn
        self.arg_names = arg_names
        self.configs = list(configs)
        self.keys = key
        self.cache = {}
        self.best_config = None
        self.nargs = None

    def prune_configs(self, kwargs):
        return list(self.configs)

    def _bench(self, *args, config, **meta):
        log = os.environ.get("STANDIN_TUNE_LOG")
        if log:
            with open(log, "a") as f:
                f.write("autotune-bench %s %s\n" % (self.base_fn.__name__, config))
        import math
        best = float(os.environ.get("STANDIN_PLAIN_BEST") or 32)
        ms = 0.01 * (1.0 + abs(math.log2(float(config.kwargs.get("BLOCK", 1)) / best)))
        return [ms, ms * 0.9, ms * 1.1]

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        if len(self.configs) > 1:
            named = {k: v for k, v in {**self.nargs, **kwargs}.items() if k in self.arg_names}
            key = [named[k] for k in self.keys if k in named]
            key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
            key = tuple(key)
            if key not in self.cache:
                start = time.time()
                timings = {c: self._bench(*args, config=c, **kwargs)
                           for c in self.prune_configs(kwargs)}
                self.bench_time = time.time() - start
                self.cache[key] = min(timings, key=timings.get)
                self.configs_timings = timings
            config = self.cache[key]
        else:
            config = self.configs[0]
        self.best_config = config
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret


runtime.Autotuner = Autotuner
runtime.autotuner = _Namespace()
runtime.autotuner.Autotuner = Autotuner


def autotune(configs, key, **kwargs):
    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, **kwargs)
    return decorator
