"""A gems op that raises on one shape, and an input iterator that raises after two inputs."""
import pytest
import torch

from . import base


@pytest.mark.flaky_add
def test_flaky_add():
    # STANDIN_ADD_RAISES_AT=<numel> makes gems' add raise on that size only.
    base.BinaryPointwiseBenchmark(op_name="flaky_add", torch_op=torch.add,
                                  dtypes=[torch.float16, torch.float32]).run()


class BrokenIterBenchmark(base.GenericBenchmark):
    def get_input_iter(self, dtype):
        for i, shape in enumerate([(64, 64), (128, 128), (256, 256)]):
            if i == 2:
                raise RuntimeError("stand-in input maker broke on its third input")
            yield torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)


@pytest.mark.broken_iter
def test_broken_iter():
    BrokenIterBenchmark(op_name="broken_iter", torch_op=torch.add, input_fn=None,
                        dtypes=[torch.float32]).run()
