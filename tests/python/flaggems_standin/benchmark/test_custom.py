"""A benchmark class with its own run (no super().run()), one that overrides get_latency, one
that times FlagGems' own op on both sides (FlagGems' test_linear_backward.py), and one whose
torch and gems get different inputs of one pair (FlagGems' test_convert_weight_to_int4pack.py)."""
import gc
import json
from dataclasses import asdict

import pytest
import torch

import flag_gems

from . import base
from .conftest import update_result
from .consts import BenchmarkMetrics, BenchmarkResult


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


class LinearBackwardBenchmark(base.Benchmark):
    def set_shapes(self, shape_file_path=None):
        self.shapes = [(64, 512), (128, 1024)]

    def get_input_iter(self, cur_dtype):
        for batch, in_features in self.shapes:
            out_features = in_features * 2
            input = torch.randn(batch, in_features, dtype=cur_dtype, device=self.device)
            weight = torch.randn(out_features, in_features, dtype=cur_dtype, device=self.device)
            grad_output = torch.randn(batch, out_features, dtype=cur_dtype, device=self.device)
            yield input, grad_output, weight, (True, True, True)


@pytest.mark.linear_backward
def test_linear_backward():
    bench = LinearBackwardBenchmark(
        op_name="linear_backward",
        # FlagGems' own op for both baseline and gems: there is no native op to compare with
        torch_op=flag_gems.linear_backward,
        dtypes=[torch.float32],
    )
    bench.set_gems(flag_gems.linear_backward)
    bench.run()


CONVERT_WEIGHT_SHAPES = [(16, 64), (32, 128)]
INNER_K_TILES = (2, 8)


def _convert_weight_input_fn(shape, device):
    """Paired inputs from one int4 weight: aten's op takes uint8 [n, k/2] (two int4 values a
    byte), FlagGems' int32 [n, k] (one a element)."""
    n, k_half = shape
    k = k_half * 2
    int4 = torch.randint(0, 16, (n, k), dtype=torch.int32, device=device)
    base_input = torch.randint(0, 256, (n, k_half), dtype=torch.uint8, device=device)
    for inner_k_tiles in INNER_K_TILES:
        yield (base_input, inner_k_tiles), (int4, inner_k_tiles)


class ConvertWeightBenchmark(base.Benchmark):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gems_op = flag_gems._convert_weight_to_int4pack

    def set_shapes(self, shape_file_path=None):
        self.shapes = CONVERT_WEIGHT_SHAPES

    def get_input_iter(self, cur_dtype):
        for shape in self.shapes:
            yield from _convert_weight_input_fn(shape, self.device)

    def _run_metric(self, input_item):
        metric = BenchmarkMetrics()
        base_input, gems_input = input_item
        base_args = list(base_input)
        gems_args = list(gems_input)
        metric.shape_detail = self.record_shapes(*gems_args)  # gems' input's shapes
        try:
            if "latency_base" in self.to_bench_metrics:
                metric.latency_base = self.get_latency(self.torch_op, *base_args)
            if "latency" in self.to_bench_metrics:
                metric.latency = self.get_latency(self.gems_op, *gems_args)
            if "speedup" in self.to_bench_metrics:
                metric.speedup = metric.latency_base / metric.latency
        except Exception as e:
            metric.error_msg = str(e)
            pytest.fail(str(e))
        return metric

    def run(self):  # FlagGems' file's own loop over its paired inputs
        self.init_user_config()
        config = base._config()
        for dtype in self.to_bench_dtypes:
            metrics = []
            input_iter = self.get_input_iter(dtype)
            done = False
            while not done:
                try:
                    input_item = next(input_iter)
                except StopIteration:
                    done = True
                    continue
                except Exception as e:
                    pytest.fail(str(e))
                metric = self._run_metric(input_item)
                metrics.append(metric)
                gc.collect()
            result = BenchmarkResult(level=config.bench_level.value, op_name=self.op_name,
                                     dtype=str(dtype), mode=config.mode.value, result=metrics)
            print(result)
            # FlagGems' file records result.to_json(): the record's JSON text, not an object
            update_result(self.op_name, json.dumps(asdict(result)))


@pytest.mark.convert_weight_to_int4pack
def test_convert_weight_to_int4pack():
    bench = ConvertWeightBenchmark(op_name="convert_weight_to_int4pack",
                                   torch_op=torch._convert_weight_to_int4pack,
                                   dtypes=[torch.uint8])
    bench.run()
