import os
import time

import pytest
import torch

from . import base

# STANDIN_HOLD_SOFTMAX=<file>: collecting this file waits until <file> exists (at most 300 s): a
# file that outlasts its call, for scripts/flaggems-check's cut-short test.
if os.environ.get("STANDIN_HOLD_SOFTMAX"):
    _deadline = time.monotonic() + 300
    while not os.path.exists(os.environ["STANDIN_HOLD_SOFTMAX"]) and time.monotonic() < _deadline:
        time.sleep(0.05)


def softmax_inputs(shape, dtype, device):
    yield torch.randn(shape, dtype=dtype, device=device), {"dim": -1}


@pytest.mark.softmax
def test_softmax():
    bench = base.GenericBenchmark(op_name="softmax", input_fn=softmax_inputs,
                                  torch_op=torch.softmax, dtypes=[torch.float32])
    bench.run()


@pytest.mark.softmax_backward
def test_softmax_backward():
    bench = base.GenericBenchmark(op_name="softmax", input_fn=softmax_inputs,
                                  torch_op=torch.softmax, dtypes=[torch.float32],
                                  is_backward=True)
    bench.run()
