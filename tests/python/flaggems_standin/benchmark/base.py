"""The stand-in's base.py, shaped like FlagGems' benchmark/base.py: Benchmark and its run loop,
get_latency through the module global `triton`, the shape lookup, the BLAS transposed pass."""

import gc
import time
from dataclasses import asdict

import pytest
import torch
import triton
import yaml

import flag_gems

from . import consts
from .conftest import Config, emit_record_logger, update_result  # noqa: F401 - by value, as FlagGems
from .consts import BenchmarkMetrics, BenchmarkResult

torch_device_fn = flag_gems.runtime.torch_device_fn
vendor_name = flag_gems.vendor_name


def _config():
    # base.py imported Config by value at import time; the live object is the conftest's.
    from . import conftest
    return conftest.Config


class Benchmark:
    device = flag_gems.device
    DEFAULT_METRICS = consts.DEFAULT_METRICS
    DEFAULT_DTYPES = consts.FLOAT_DTYPES
    DEFAULT_SHAPES = consts.DEFAULT_SHAPES
    DEFAULT_SHAPE_DESC = "M, N"

    def __init__(self, op_name, torch_op, dtypes=None, is_backward=False, is_inplace=False,
                 **kwargs):
        self.op_name = op_name + ("_backward" if is_backward and "_backward" not in op_name
                                  else "")
        self.torch_op = torch_op
        self.gems_op = kwargs.get("gems_op")
        self.is_backward = is_backward
        self.is_inplace = is_inplace
        self.dtypes = dtypes if dtypes is not None else self.DEFAULT_DTYPES
        self.to_bench_dtypes = self.dtypes
        self.to_bench_metrics = list(self.DEFAULT_METRICS)
        self.shapes = self.DEFAULT_SHAPES
        self.shape_desc = self.DEFAULT_SHAPE_DESC

    def set_shapes(self, path):
        with open(path) as f:
            table = yaml.safe_load(f) or {}
        entry = table.get(self.op_name)
        if entry is None:
            for cls in type(self).__mro__:
                if cls.__name__ in table:
                    entry = table[cls.__name__]
                    break
        if entry is not None:
            self.shapes = entry.get("shapes", self.DEFAULT_SHAPES)
            self.shape_desc = entry.get("shape_desc", self.DEFAULT_SHAPE_DESC)
        self.shapes = [tuple(s) for s in self.shapes]
        if _config().bench_level == consts.BenchLevel.COMPREHENSIVE:
            more = self.set_more_shapes()
            if more:
                self.shapes = list(dict.fromkeys(self.shapes + more))

    def set_more_shapes(self):
        return []

    def set_dtypes(self, wanted):
        if wanted and not all(d in self.dtypes for d in wanted):
            raise ValueError("Given dtype(s) can't be supported by this op '%s'" % self.op_name)
        self.to_bench_dtypes = wanted or self.dtypes

    def record_shapes(self, *args, **kwargs):
        def parse(x):
            if isinstance(x, torch.Tensor):
                return x.size()
            if isinstance(x, (int, float, str, torch.dtype)):
                return x
            if isinstance(x, (list, tuple)):
                return [parse(v) for v in x]
            if isinstance(x, dict):
                return {k: parse(v) for k, v in x.items()}
            return None
        # FlagGems' own: the keyword arguments alone where there are no positional ones (a
        # generative op's {"size", "dtype", "device"}, in that order)
        if not args and kwargs:
            return {k: parse(v) for k, v in kwargs.items()}
        return [parse(a) for a in args]

    def set_gems(self, gems_op):
        self.gems_op = gems_op

    def init_user_config(self):
        self.set_dtypes(_config().user_desired_dtypes)
        self.set_shapes(_config().shape_file)

    def get_latency(self, op, *args, **kwargs):
        fn = lambda: op(*args, **kwargs)  # noqa: E731
        xs = None
        if self.is_backward:
            out = fn()
            dout = torch.randn_like(out)
            xs = [a for a in args if torch.is_tensor(a) and a.requires_grad]
            fn = lambda: torch.autograd.grad((out,), xs, grad_outputs=(dout,),  # noqa: E731
                                             retain_graph=True)
        mode = _config().mode
        if mode == consts.BenchMode.KERNEL:
            return triton.testing.do_bench(fn, warmup=_config().warm_up,
                                           rep=_config().repetition, return_mode="median",
                                           grad_to_none=xs)
        if mode == consts.BenchMode.CUDAGRAPH:
            return triton.testing.do_bench_cudagraph(fn, rep=_config().repetition,
                                                     return_mode="median", grad_to_none=xs)
        start = time.time()  # operator / wrapper: host wall clocks
        for _ in range(10):
            fn()
        torch_device_fn.synchronize()
        return (time.time() - start) / 10 * 1000

    def get_gbps(self, args, latency=None):
        raise NotImplementedError

    def get_tflops(self, op, *args, **kwargs):
        from torch.utils.flop_counter import FlopCounterMode
        with FlopCounterMode(display=False) as counter:
            op(*args, **kwargs)
        return counter.get_total_flops()

    def get_input_iter(self, dtype):
        raise NotImplementedError

    def unpack_to_args_kwargs(self, items):
        args, kwargs = [], {}
        for x in items:
            if isinstance(x, dict):
                kwargs.update(x)
            else:
                args.append(x)
        if self.is_backward:
            args = [a.clone().requires_grad_() if torch.is_tensor(a) and
                    torch.is_floating_point(a) else a for a in args]
        return args, kwargs

    def run(self):
        self.init_user_config()
        for dtype in self.to_bench_dtypes:
            metrics = []
            it = self.get_input_iter(dtype)
            while True:
                try:
                    inp = next(it)
                except StopIteration:
                    break
                except Exception as e:
                    pytest.fail(str(e))
                metric = BenchmarkMetrics()
                try:
                    args, kwargs = self.unpack_to_args_kwargs(inp)
                    metric.shape_detail = self.record_shapes(*args, **kwargs)
                    if "latency_base" in self.to_bench_metrics:
                        metric.latency_base = self.get_latency(self.torch_op, *args, **kwargs)
                    if "latency" in self.to_bench_metrics:
                        if self.gems_op:
                            metric.latency = self.get_latency(self.gems_op, *args, **kwargs)
                        else:
                            with flag_gems.use_gems():
                                metric.latency = self.get_latency(self.torch_op, *args,
                                                                  **kwargs)
                    metric.speedup = metric.latency_base / metric.latency
                    if "gbps" in self.to_bench_metrics:
                        metric.gbps_base = self.get_gbps(args, latency=metric.latency_base)
                        metric.gbps = self.get_gbps(args, latency=metric.latency)
                    if "tflops" in self.to_bench_metrics:
                        metric.tflops = (self.get_tflops(self.torch_op, *args, **kwargs) /
                                         metric.latency / 1e12 * 1e3)
                except Exception as e:
                    metric.error_msg = str(e)
                    pytest.fail(str(e))  # the whole dtype's record is lost, as in FlagGems
                finally:
                    metrics.append(metric)
                    gc.collect()
            result = BenchmarkResult(op_name=self.op_name, dtype=str(dtype),
                                     mode=_config().mode.value,
                                     level=_config().bench_level.value, result=metrics)
            print(result)
            update_result(self.op_name, asdict(result))


class GenericBenchmark(Benchmark):
    DEFAULT_METRICS = consts.DEFAULT_METRICS + ["gbps"]

    def __init__(self, *args, input_fn, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_fn = input_fn

    def set_more_shapes(self):
        return [(4096, 4096)]

    def get_input_iter(self, dtype):
        for shape in self.shapes:
            yield from self.input_fn(shape, dtype, self.device)

    def get_gbps(self, args, latency=None):
        moved = sum(a.numel() * a.element_size() for a in args if torch.is_tensor(a)) * 2
        return moved / (latency * 1e-3) / 1e9


class BinaryPointwiseBenchmark(GenericBenchmark):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, input_fn=self._inputs, **kwargs)

    @staticmethod
    def _inputs(shape, dtype, device):
        yield torch.randn(shape, dtype=dtype, device=device), \
            torch.randn(shape, dtype=dtype, device=device)


class BlasBenchmark(Benchmark):
    DEFAULT_METRICS = consts.DEFAULT_METRICS + ["tflops"]

    def __init__(self, *args, input_fn, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_fn = input_fn

    def get_input_iter(self, dtype):
        for b, m, n, k in self.shapes:
            yield from self.input_fn(b, m, n, k, dtype, self.device, False)
        if _config().bench_level == consts.BenchLevel.COMPREHENSIVE:  # B column-major too
            for b, m, n, k in self.shapes:
                yield from self.input_fn(b, m, n, k, dtype, self.device, True)
