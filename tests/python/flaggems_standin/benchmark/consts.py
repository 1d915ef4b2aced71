"""The stand-in's constants, shaped like FlagGems' benchmark/consts.py."""

import json
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any, List, Optional

import torch

FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32]
INT_DTYPES = [torch.int32, torch.int64]
BOOL_DTYPES = [torch.bool]
COMPLEX_DTYPES = [torch.complex64]

DEFAULT_WARMUP_TIME = 1000  # ms: FlagGems' fixed warmup per measurement
DEFAULT_ITER_TIME = 100

DEFAULT_SHAPES = [(64, 64), (1024, 1024)]
DEFAULT_METRICS = ["latency_base", "latency", "speedup"]
ALL_AVAILABLE_METRICS = ["latency_base", "latency", "speedup", "gbps", "tflops"]


class BenchMode(Enum):
    KERNEL = "kernel"
    OPERATOR = "operator"
    WRAPPER = "wrapper"
    CUDAGRAPH = "cudagraph"


class BenchLevel(Enum):
    COMPREHENSIVE = "comprehensive"
    CORE = "core"


@dataclass
class BenchmarkMetrics:
    shape_detail: Any = None
    latency_base: Optional[float] = None
    latency: Optional[float] = None
    speedup: Optional[float] = None
    gbps_base: Optional[float] = None
    gbps: Optional[float] = None
    tflops: Optional[float] = None
    error_msg: Optional[str] = None


@dataclass
class BenchmarkResult:
    op_name: str
    dtype: str
    mode: str
    level: str
    result: List[BenchmarkMetrics] = field(default_factory=list)

    def __str__(self):
        lines = ["Operator: %s  dtype: %s  mode: %s  level: %s" %
                 (self.op_name, self.dtype, self.mode, self.level)]
        for m in self.result:
            lines.append("  %s  torch %s ms  gems %s ms  speedup %s" %
                         (m.shape_detail, m.latency_base, m.latency, m.speedup))
        return "\n".join(lines)

    def to_json(self):
        return json.dumps(asdict(self), default=str)
