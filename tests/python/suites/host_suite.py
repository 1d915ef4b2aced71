# A Python op suite for the cpu backend (tests/python/test_suite.py): plain Python callables,
# numpy where it is installed. Shapes inline (py_scale) and from caliber's host shape file by
# family (py_sum: reduction).
import math
import random
import time

import caliber


def vector(case):
    rng = random.Random(case.numel)
    return ([rng.uniform(0.5, 1.5) for _ in range(case.numel)],)


def scale_inputs(case):
    rng = random.Random(7)
    return ([rng.uniform(-1, 1) for _ in range(case.numel)], 3.0)


def scale_list(xs, a):
    return [a * x for x in xs]


def scale_map(xs, a):
    return list(map(a.__mul__, xs))


def nap(ms):
    def sleeper(xs):
        time.sleep(ms / 1000.0)
        return list(xs)
    return sleeper


OPS = [
    caliber.Op(name="py_sum", family="reduction", dtypes=["f64"], inputs=vector,
               baseline=("builtin_sum", lambda xs: [sum(xs)]),
               candidate=("fsum", lambda xs: [math.fsum(xs)]),
               reference=lambda xs: [math.fsum(xs)],
               flops=lambda case: case.numel),
    caliber.Op(name="py_scale", family="pointwise", dtypes=["f64"], shapes=[[4096], [64, 64]],
               inputs=scale_inputs, baseline=("list_comp", scale_list),
               candidate={"map": scale_map}, tolerance=(0.0, 1e-15),
               bytes=lambda case: 16 * case.numel),
    # launches of known length: the timer must read them (40 ms baseline, 1 ms candidate: a
    # ratio far beyond what a loaded host's sleep overshoot can close)
    caliber.Op(name="py_nap", family="pointwise", dtypes=["f64"], shapes=[[4]], inputs=vector,
               baseline=("nap40", nap(40.0)), candidate=("nap1", nap(1.0))),
]
