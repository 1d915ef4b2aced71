# One op whose candidate kills its process (as a sticky device error makes a process useless):
# `python3 -m caliber batch` isolates it, and the other op still runs.
import os
import signal

import caliber


def inputs(case):
    return ([1.0] * case.numel,)


def crash(xs):
    os.kill(os.getpid(), signal.SIGKILL)


OPS = [
    caliber.Op(name="py_first", family="pointwise", dtypes=["f64"], shapes=[[256]],
               inputs=inputs, baseline=("copy", lambda xs: list(xs)),
               candidate=("slice", lambda xs: xs[:])),
    caliber.Op(name="py_crash", family="pointwise", dtypes=["f64"], shapes=[[256]],
               inputs=inputs, baseline=("copy", lambda xs: list(xs)), candidate=("crash", crash)),
    caliber.Op(name="py_last", family="pointwise", dtypes=["f64"], shapes=[[256]],
               inputs=inputs, baseline=("copy", lambda xs: list(xs)),
               candidate=("slice", lambda xs: xs[:])),
]
