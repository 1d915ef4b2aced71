"""caliber for PyTorch and Triton users (docs/python.md).

    import caliber
    ms = caliber.bench(lambda: torch.mm(a, b))           # like triton.testing.do_bench
    m = caliber.measure(lambda: torch.mm(a, b))          # the whole result: samples, markers...

    python3 -m caliber run suite.py                      # a Python op suite into a run directory
"""

from ._lib import CaliberError, markers
from .bench import Measurement, bench, measure
from .suite import Case, Op, SuiteError

__all__ = ["bench", "measure", "Measurement", "Op", "Case", "CaliberError", "SuiteError",
           "markers"]
__version__ = "0.1.0"
