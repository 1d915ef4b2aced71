# One op whose candidate raises: its cases fail alone, the other op's rows are kept (exit 1).
import caliber


def inputs(case):
    return ([1.0] * case.numel,)


def broken(xs):
    raise ZeroDivisionError("candidate broke on purpose")


OPS = [
    caliber.Op(name="py_ok", family="pointwise", dtypes=["f64"], shapes=[[256]], inputs=inputs,
               baseline=("copy", lambda xs: list(xs)), candidate=("slice", lambda xs: xs[:])),
    caliber.Op(name="py_broken", family="pointwise", dtypes=["f64"], shapes=[[256]],
               inputs=inputs, baseline=("copy", lambda xs: list(xs)),
               candidate=("broken", broken)),
]
