import pytest
import torch

from . import base


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
