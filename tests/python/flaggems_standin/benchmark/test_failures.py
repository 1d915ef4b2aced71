"""A gems op that raises on one shape, an input iterator that raises after two inputs (in a
forward and in a backward benchmark), and fixtures that raise in a test's setup and teardown."""
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


@pytest.mark.broken_grad
def test_broken_iter_backward():
    # its op is broken_grad_backward (FlagGems appends _backward), its marker broken_grad
    BrokenIterBenchmark(op_name="broken_grad", torch_op=torch.add, input_fn=None,
                        dtypes=[torch.float32], is_backward=True).run()


@pytest.fixture
def breaks_in_setup():
    raise RuntimeError("stand-in fixture broke in setup")


@pytest.mark.setup_error
def test_setup_error(breaks_in_setup):
    base.BinaryPointwiseBenchmark(op_name="setup_add", torch_op=torch.add,
                                  dtypes=[torch.float32]).run()


@pytest.fixture
def breaks_in_teardown():
    yield
    raise RuntimeError("stand-in fixture broke in teardown")


@pytest.mark.teardown_error
def test_teardown_error(breaks_in_teardown):
    base.BinaryPointwiseBenchmark(op_name="teardown_add", torch_op=torch.add,
                                  dtypes=[torch.float32]).run()
