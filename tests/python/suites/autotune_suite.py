# A suite whose candidates launch through a stand-in for Triton's autotuner (tests/python/
# test_autotune.py): the same attributes and the same run() as triton.runtime.autotuner.Autotuner
# (configs, a cache dict by call key, keys, _bench per config, best_config), no triton needed.
# Every sweep and every config it benchmarks is appended to $AUTOTUNE_LOG, so a test can count
# them. The benchmark's times are fixed: BLOCK=128 wins, BLOCK=1024 "runs out of resources".
import os
import random

import caliber

TIMES = {64: 0.30, 128: 0.10, 256: 0.20, 1024: float("inf")}


def log(line):
    path = os.environ.get("AUTOTUNE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3):
        self.kwargs = kwargs
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = 1
        self.maxnreg = None
        self.pre_hook = None

    def all_kwargs(self):
        return dict(self.kwargs, num_warps=self.num_warps, num_stages=self.num_stages)


class JitFunction:
    """What the autotuner wraps: a kernel with its source text (a kernel edit is a new version)."""

    def __init__(self, name):
        self.__name__ = name
        self.src = "def %s(xs, a, BLOCK): ...%s" % (name, os.environ.get("KERNEL_EDIT", ""))

    launched = set()

    def run(self, xs, a, BLOCK, **_):
        if BLOCK not in self.launched:  # once per config and process: the config really ran
            self.launched.add(BLOCK)
            log("launch %s %s" % (self.__name__, BLOCK))
        out = []
        for i in range(0, len(xs), BLOCK):
            out.extend(a * x for x in xs[i:i + BLOCK])
        return out


class Autotuner:
    def __init__(self, fn, arg_names, configs, key):
        self.fn = fn
        self.arg_names = arg_names
        self.configs = configs
        self.keys = key
        self.cache = {}

    def _bench(self, *args, config, **meta):
        log("bench %s" % config.kwargs["BLOCK"])
        t = TIMES[config.kwargs["BLOCK"]]
        return [t, t, t]

    def run(self, *args, **kwargs):
        nargs = dict(zip(self.arg_names, args))
        key = tuple(len(nargs[k]) for k in self.keys if k in nargs)
        if key not in self.cache:
            log("autotune %s %r" % (self.fn.__name__, key))
            timings = {c: self._bench(*args, config=c, **kwargs) for c in self.configs}
            self.cache[key] = min(timings, key=timings.get)
        self.best_config = self.cache[key]
        return self.fn.run(*args, **kwargs, **self.best_config.kwargs)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, **kwargs)


class CallableAutotuner(Autotuner):
    """A candidate that is the autotuner itself."""

    def __call__(self, *args):
        return self.run(*args)


def configs():
    # AUTOTUNE_BLOCKS: another config list under the same kernel source (a stale cached choice)
    blocks = os.environ.get("AUTOTUNE_BLOCKS", "64,128,256,1024")
    return [Config({"BLOCK": int(b)}) for b in blocks.split(",")]


scale_kernel = Autotuner(JitFunction("scale_kernel"), ["xs", "a"], configs(), key=["xs"])
self_tuned = CallableAutotuner(JitFunction("self_tuned"), ["xs", "a"], configs(), key=["xs"])


def inputs(case):
    rng = random.Random(case.numel)
    return [rng.uniform(0.5, 1.5) for _ in range(case.numel)], 3.0


def tiled(xs, a):
    return scale_kernel[(1,)](xs, a)


OPS = [
    caliber.Op(name="at_scale", family="pointwise", dtypes=["f64"], shapes=[[4096], [64, 64]],
               inputs=inputs, baseline=("list_comp", lambda xs, a: [a * x for x in xs]),
               candidate=("tiled", tiled), autotune={"tiled": scale_kernel},
               tolerance=(0.0, 1e-15)),
    caliber.Op(name="at_self", family="pointwise", dtypes=["f64"], shapes=[[512]],
               inputs=inputs, candidate=("self_tuned", self_tuned),
               reference=lambda xs, a: [a * x for x in xs]),
]
