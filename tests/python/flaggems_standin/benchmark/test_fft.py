import pytest
import torch

import flag_gems

from . import base


class FftBenchmark(base.Benchmark):
    DEFAULT_DTYPES = [torch.complex64]

    def get_input_iter(self, dtype):
        for m, n in self.shapes:
            yield torch.complex(torch.randn((m, n)), torch.randn((m, n))),


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
@pytest.mark.fft
def test_perf_fft():
    bench = FftBenchmark(op_name="fft", torch_op=torch.fft.fft, gems_op=flag_gems.fft)
    bench.run()


@pytest.mark.skipif(True, reason="CUDA is not available (a guard of another reason's spelling)")
@pytest.mark.fft_other
def test_fft_other_guard():
    pass
