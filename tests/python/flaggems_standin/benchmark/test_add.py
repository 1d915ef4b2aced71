import pytest
import torch

import flag_gems

from . import base, consts


@pytest.mark.add
@pytest.mark.skipif(flag_gems.vendor_name == "tsingmicro", reason="not on tsingmicro")
def test_add():
    bench = base.BinaryPointwiseBenchmark(op_name="add", torch_op=torch.add,
                                          dtypes=consts.FLOAT_DTYPES)
    bench.run()
