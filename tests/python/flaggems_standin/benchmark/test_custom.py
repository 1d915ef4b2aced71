"""A benchmark class with its own run (no super().run()), and one that overrides get_latency."""
import pytest
import torch

import flag_gems

from . import base


class CustomRunBenchmark(base.Benchmark):
    def run(self):  # its own loop: get_latency on shapes of its own, no input iterator
        for m in (128, 512):
            x = torch.randn((m, m), dtype=torch.float16)
            y = torch.randn((m, m), dtype=torch.float16)
            base_ms = self.get_latency(torch.add, x, y)
            with flag_gems.use_gems():
                gems_ms = self.get_latency(torch.add, x, y)
            print("custom", m, base_ms, gems_ms)


@pytest.mark.custom_op
def test_custom_run():
    CustomRunBenchmark(op_name="custom_add", torch_op=torch.add).run()


class IndexFillBenchmark(base.BinaryPointwiseBenchmark):
    calls = 0

    def get_latency(self, op, *args, **kwargs):
        IndexFillBenchmark.calls += 1  # an override that defers to FlagGems' own
        return super().get_latency(op, *args, **kwargs)


@pytest.mark.index_fill
def test_index_fill():
    IndexFillBenchmark(op_name="index_fill", torch_op=torch.add, dtypes=[torch.float32]).run()
